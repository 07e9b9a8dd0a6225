"""Overhead as whole processes taking turns (issue 18, acceptance 6):

  python3 ovh_turns.py run KIND OUTDIR --lib LIBVGPU [--lib-env NAME=VALUE] [--lib2 LIBVGPU]
                       [--lib2-env NAME=VALUE] [--events-config] [--cupti-cycle-config]
                       [--pin 8-11] [--one-cpu 8] [--limit 90]
                       [--slice-s 1.9] [--rounds 8] [--budget-s 250] [--seed 1] [--startup-s 10]
  python3 ovh_turns.py report OUTDIR [OUTDIR...]

KIND is a closed loop of sm_workloads.py: small (the launch loop) or train (the training loop).
A batch starts four whole processes the way a pod starts them, all pinned to the same cores
(--pin): native, native2 (the A/A control), preload (LD_PRELOAD libvgpu, no limit) and l<LIMIT>
(gpucores LIMIT, policy force: a limit that does not bind). They serve work on request
(sm_workloads.py --serve) and take turns on the GPU, one at a time: each round gives each process
one slice of the same fixed work (K units, about --slice-s s of the native loop), in a fresh
random order. So every comparison is between separate processes, each with its own start-up,
preload and limiter, while the host's speed, which drifts over tens of seconds on the lent VMs,
is nearly the same within a round. Batches of fresh processes repeat until --budget-s; the first
batch's native probe sizes K for all of them.

Slices of ~1.9 s were chosen to keep the limiter's exposure to its sampled-mode record windows
(then 100 ms every 2 s of wall time, opened by the sampler's first pass once one is due; the
sampler sleeps while its process launches nothing) near that of a process running alone: at most
one window a slice. Since the limiter detaches CUPTI far below its limit (library 20bf8e9 on), a
window comes every 10 s of wall time, so shorter slices (--slice-s 0.5) no longer raise the
exposure much, and neighbouring slices see a more similar host. The limited process's stats
line (records= of launches=, attaches=, attached_ms=) tells what it was: records for 6-8 % of
the launches on 2026-11-28 before detaching, 3-5 % after (mostly its first seconds).

Overhead of a configuration in a round = 100 x (native rate / its rate - 1): the extra time the
same work takes, positive = slower. report prints per configuration the median over all rounds,
a hierarchical bootstrap 95 % interval (batches resampled, then rounds within them: fresh
processes can differ as a whole), the plain bootstrap and order-statistic intervals over rounds,
the per-batch medians and a sign test (rounds in which it was slower than native), with
native2's as the A/A control; the same for each slice's median unit time (every unit ends in a
synchronisation: one step, or 200 launches), which drops host slowdowns shorter than half a
slice and the limiter's own bursts alike. Verdict: PASS when the hierarchical interval's upper
end is within the bound (1 % without a limit, 2 % with one), FAIL when its lower end is above
it, undecided otherwise. report with several OUTDIRs pools their rounds.
"""
import argparse
import json
import os
import random
import select
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.environ.get("OVH_TURNS_WORKER") or os.path.join(HERE, "sm_workloads.py")  # override: tests
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # sm_v2_report is imported from here: no __pycache__ in the tree


class Worker:
    def __init__(self, cfg, cmd, env, err_path):
        self.cfg = cfg
        self.err = open(err_path, "w")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, env=env)
        self.buf = b""
        self.ready_s = None
        self.final = None

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def line(self, timeout):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("%s: no answer within %.0f s" % (self.cfg, timeout))
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError("%s exited (rc %s)" % (self.cfg, self.p.poll()))
                self.buf += chunk
        out, self.buf = self.buf.split(b"\n", 1)
        return out.decode(errors="replace").strip()

    def run(self, k, timeout=120):
        """(elapsed s, items, the process's CPU s meanwhile or None, steal % of its CPUs or None, the
        median unit's s or None)."""
        self.send("run %d" % k)
        while True:
            ln = self.line(timeout)
            if ln.startswith("done "):
                _, el, items, *more = ln.split()
                cpu = float(more[0]) if more else None
                steal = float(more[1]) if len(more) > 1 and float(more[1]) >= 0 else None
                unit_s = float(more[2]) if len(more) > 2 and float(more[2]) > 0 else None
                return float(el), int(items), cpu, steal, unit_s

    def stop(self):
        try:
            self.send("quit")
            ln = self.line(60)
            self.final = json.loads(ln)
        except (OSError, ValueError, TimeoutError, EOFError) as e:
            self.final = {"error": str(e)}
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.err.close()


def configs(a, cache):
    """(name, environment) of each process of a batch, per the run's options `a`."""
    lib, limit = a.lib, a.limit
    base = {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "CUDA_DEVICE_SM_LIMIT", "GPU_CORE_UTILIZATION_POLICY",
                         "CUDA_DEVICE_MEMORY_SHARED_CACHE", "VGPU_SM_STATS", "CUDA_TASK_PRIORITY",
                         "START_AT", "END_AT")}
    base["PYTHONUNBUFFERED"] = "1"
    pre = dict(base, LD_PRELOAD=lib)
    limited = dict(pre, CUDA_DEVICE_SM_LIMIT=str(limit), GPU_CORE_UTILIZATION_POLICY="force", VGPU_SM_STATS="1")
    out = [("native", dict(base)), ("native2", dict(base)),
           ("preload", dict(pre, CUDA_DEVICE_MEMORY_SHARED_CACHE=cache + ".preload")),
           ("l%d" % limit, dict(limited, CUDA_DEVICE_MEMORY_SHARED_CACHE=cache + ".limited",
                                **dict(kv.split("=", 1) for kv in a.lib_env or [])))]
    if a.cupti_cycle_config:  # no libvgpu: CUPTI attached and finalized at start (does a detach cost after?)
        out.append(("nativecc", dict(base, VGPU_BENCH_CUPTI_CYCLE="1")))
    if a.lib2:  # the same limit with another build of the library: an A/B of two libraries
        out.append(("l%db" % limit, dict(limited, LD_PRELOAD=a.lib2, CUDA_DEVICE_MEMORY_SHARED_CACHE=cache + ".lib2",
                                         **dict(kv.split("=", 1) for kv in a.lib2_env or []))))
    if a.events_config:  # the same limit measured with CUDA events only: what CUPTI's part costs
        out.append(("l%dev" % limit, dict(limited, CUDA_DEVICE_MEMORY_SHARED_CACHE=cache + ".events",
                                          VGPU_CUPTI_LIBRARY="off")))
    return out


def fresh_lockdir():
    shutil.rmtree("/tmp/vgpulock", ignore_errors=True)
    os.makedirs("/tmp/vgpulock", exist_ok=True)
    os.chmod("/tmp/vgpulock", 0o1777)


def start_batch(a, rng, batch, prefix, workers):
    """Starts a batch's processes (configs(a, ...)) in a random order, with a fresh lock directory and
    fresh region files, each pinned as a's options say, its stderr in
    a.outdir/<prefix>_<kind>_b<batch>_<config>.err; appends each to `workers` (the caller stops them)
    and returns once every one said it is ready (Worker.ready_s)."""
    fresh_lockdir()
    cache = "/tmp/vgpu-bench/%s_%s_b%d" % (prefix, a.kind, batch)
    os.makedirs("/tmp/vgpu-bench", exist_ok=True)
    cfgs = configs(a, cache)
    for _, env in cfgs:  # each limited or preloaded process's region file, fresh
        f = env.get("CUDA_DEVICE_MEMORY_SHARED_CACHE")
        if f and os.path.exists(f):
            os.unlink(f)
    rng.shuffle(cfgs)  # start order
    for cfg, env in cfgs:
        cmd = ["taskset", "-c", a.pin, sys.executable, WORK, a.kind, "--serve"] + (
            ["--one-cpu", str(a.one_cpu)] if a.one_cpu is not None else [])
        workers.append(Worker(cfg, cmd, env, os.path.join(a.outdir, "%s_%s_b%d_%s.err" % (
            prefix, a.kind, batch, cfg))))
    for w in workers:
        ln = w.line(180)
        while not ln.startswith("ready"):
            ln = w.line(180)
        w.ready_s = float(ln.split()[1])


def slice_units(native, kind, slice_s):
    """Units of work in a slice of about slice_s s, sized on the native process after a short warm-up
    of its own."""
    probe = 3 if kind == "train" else 20
    native.run(probe)
    el = native.run(probe)[0]
    k = max(2, round(slice_s * probe / el))
    print("slice: %d units (native probe: %d units in %.3f s)" % (k, probe, el), flush=True)
    return k


def warm_up(order, k, warmup_s):
    """Unrecorded warm-up: a slice each at least, warmup_s s of work each at most (the limited ones'
    first seconds with CUPTI attached, until they are seen far below the limit)."""
    for w in order:
        warm = 0.0
        while True:
            warm += w.run(k)[0]
            if warm >= warmup_s:
                break


def cmd_run(a):
    os.makedirs(a.outdir, exist_ok=True)
    raw = open(os.path.join(a.outdir, "turns_%s.jsonl" % a.kind), "w")
    rng = random.Random(a.seed)
    t_begin = time.time()
    k, est, batch, failed = None, None, 0, 0
    n_cfg = len(configs(a, ""))
    print("turns %s: pin %s, limit %d, slice %.2f s, %d rounds a batch, warm-up %.1f s, budget %.0f s, seed %d" % (
        a.kind, a.pin, a.limit, a.slice_s, a.rounds, a.warmup_s, a.budget_s, a.seed), flush=True)
    while True:
        if est is None:
            est = a.startup_s + n_cfg * ((a.rounds + 1.5) * (a.slice_s + 0.05) + a.warmup_s)
        if time.time() - t_begin + est > a.budget_s:
            break
        batch += 1
        b0 = time.time()
        workers = []
        try:
            start_batch(a, rng, batch, "turns", workers)
            t_ready = time.time() - b0
            if k is None:
                k = slice_units({w.cfg: w for w in workers}["native"], a.kind, a.slice_s)
            order = list(workers)
            rng.shuffle(order)
            warm_up(order, k, a.warmup_s)
            for r in range(1, a.rounds + 1):
                rng.shuffle(order)
                for pos, w in enumerate(order):
                    el, items, cpu, steal, unit_s = w.run(k)
                    raw.write(json.dumps({"batch": batch, "round": r, "pos": pos, "cfg": w.cfg, "units": k,
                                          "elapsed": el, "items": items, "rate": items / el,
                                          "cpu_s": cpu, "steal_pct": steal, "unit_s": unit_s,
                                          "t": round(time.time() - t_begin, 3)}) + "\n")
                raw.flush()
        except (OSError, ValueError, TimeoutError, EOFError) as e:
            print("batch %d failed: %s" % (batch, e), flush=True)
            failed += 1
        finally:
            for w in workers:
                w.stop()
                raw.write(json.dumps({"batch": batch, "cfg": w.cfg, "ready_s": w.ready_s, "final": w.final,
                                      "rc": w.p.returncode}) + "\n")
            raw.flush()
        est = time.time() - b0
        print("batch %d: %.1f s (processes ready after %.1f s; start-up %s)" % (
            batch, est, t_ready if workers else 0, ", ".join(
                "%s %.1f" % (w.cfg, w.ready_s) for w in workers if w.ready_s is not None)), flush=True)
        if failed >= 2:
            print("two batches failed: stopping", flush=True)
            break
    raw.close()
    print("%d batches in %.0f s" % (batch, time.time() - t_begin), flush=True)
    report([a.outdir], a.kind)


def hier_ci(groups, boot=5000, seed=1):
    """Percentile bootstrap of the median over batches resampled, then rounds within them."""
    rng = random.Random(seed)
    keys = list(groups)
    meds = []
    for _ in range(boot):
        pool = []
        for b in rng.choices(keys, k=len(keys)):
            xs = groups[b]
            pool.extend(rng.choices(xs, k=len(xs)))
        meds.append(statistics.median(pool))
    meds.sort()
    return meds[int(0.025 * boot)], meds[int(0.975 * boot) - 1]


def overhead_table(title, rounds, value, per_batch_line=True):
    """One table: per configuration, 100 x (its value / native's - 1) per round, where value(round, cfg)
    is the time per unit of work (None where unknown)."""
    from math import comb

    from sm_v2_report import median_ci
    cfgs = sorted({c for r in rounds.values() for c in r} - {"native"},
                  key=lambda c: (c != "native2", c != "preload", c))
    print(title)
    print("%-8s %6s %9s %20s %20s %20s  %s" % (
        "config", "rounds", "overhead", "hier. bootstrap CI", "bootstrap CI", "order-stat CI", "verdict"))
    per_batch = {}
    for c in cfgs:
        groups = {}
        for key, r in rounds.items():
            mine, nat = value(r, c), value(r, "native")
            if mine is not None and nat:
                groups.setdefault(key[:2], []).append(100 * (mine / nat - 1))
        xs = [x for g in groups.values() for x in g]
        if len(xs) < 3:
            continue
        hlo, hhi = hier_ci(groups)
        (blo, bhi), oci = median_ci(xs)
        if c == "native2":
            verdict = "A/A control"
        elif c.startswith("native"):
            verdict = "control (no libvgpu)"
        else:
            bound = 1.0 if c == "preload" else 2.0
            verdict = ("PASS (upper %.2f <= %.0f)" % (hhi, bound) if hhi <= bound else
                       "FAIL (lower %.2f > %.0f)" % (hlo, bound) if hlo > bound else
                       "undecided (interval holds %.0f)" % bound)
        n, slower = len(xs), sum(x > 0 for x in xs)
        tail = sum(comb(n, i) for i in range(min(slower, n - slower) + 1)) / 2.0 ** n
        print("%-8s %6d %+8.2f%% %20s %20s %20s  %s; slower in %d/%d (sign test p %.3f)" % (
            c, n, statistics.median(xs), "[%+.2f, %+.2f] %%" % (hlo, hhi), "[%+.2f, %+.2f] %%" % (blo, bhi),
            "[%+.2f, %+.2f] %%" % oci if oci else "-", verdict, slower, n, min(1.0, 2 * tail)))
        per_batch[c] = {b: statistics.median(groups[b]) for b in groups}
    if per_batch_line:
        print("per-batch medians (%%): %s" % "; ".join(
            "%s %s" % (c, " ".join("%+.2f" % v for _, v in sorted(pb.items()))) for c, pb in per_batch.items()))


def fast_slices(slices, q=0.9, boot=2000, seed=1):
    """A second estimator, for noise that only ever slows a slice (the lent hosts' loops ran 100-160 k
    launches/s in neighbouring 0.5-s slices): each configuration's q-quantile of slice rates against
    that of both native processes pooled, with a bootstrap interval over slices."""
    by = {}
    for x in slices:
        by.setdefault(x["cfg"], []).append(x["rate"])
    nat = by.get("native", []) + by.get("native2", [])

    def qu(v):
        v = sorted(v)
        return v[int(q * (len(v) - 1))]
    rng = random.Random(seed)
    out = []
    for c in sorted(by, key=lambda c: (c != "preload", c)):
        if c.startswith("native") or len(by[c]) < 10:
            continue
        est = []
        for _ in range(boot):
            est.append(100 * (qu(rng.choices(nat, k=len(nat))) / qu(rng.choices(by[c], k=len(by[c]))) - 1))
        est.sort()
        out.append("%s %+.2f%% [%+.2f, %+.2f]" % (c, 100 * (qu(nat) / qu(by[c]) - 1), est[int(0.025 * boot)],
                                                  est[int(0.975 * boot) - 1]))
    if out:
        print("-- fast slices: p%d of slice rates vs native+native2 pooled (supplementary): %s" % (
            round(100 * q), "; ".join(out)))


def against_both_natives(rounds, field, mean):
    """The rounds that have both native processes, with native's `field` replaced by mean(native's,
    native2's) and native2 left out: the reference of the tables "against the mean of native and
    native2"."""
    return {key: {**{c: x for c, x in r.items() if c not in ("native", "native2")},
                  "native": {field: mean(r["native"][field], r["native2"][field])}}
            for key, r in rounds.items() if "native2" in r and r["native"].get(field) and r["native2"].get(field)}


def report(outdirs, only_kind=None):
    for kind in ("small", "train"):
        if only_kind and kind != only_kind:
            continue
        slices, procs = [], []
        for d in outdirs:
            path = os.path.join(d, "turns_%s.jsonl" % kind)
            if not os.path.exists(path):
                continue
            for ln in open(path):
                x = json.loads(ln)
                x["dir"] = d
                (slices if "rate" in x else procs).append(x)
        if not slices:
            continue
        rounds = {}
        for x in slices:
            rounds.setdefault((x["dir"], x["batch"], x["round"]), {})[x["cfg"]] = x
        rounds = {key: r for key, r in rounds.items() if "native" in r}
        batches = sorted({key[:2] for key in rounds})
        print("== turns %s: %d rounds in %d batches (%s)" % (kind, len(rounds), len(batches), " ".join(outdirs)))
        cfgs = sorted({c for r in rounds.values() for c in r}, key=lambda c: (c != "native", c != "native2",
                                                                            c != "preload", c))
        print("median rate/s: %s" % ", ".join("%s %.1f" % (c, statistics.median(
            r[c]["rate"] for r in rounds.values() if c in r)) for c in cfgs))
        overhead_table("-- wall time per unit (what the acceptance bounds)", rounds,
                       lambda r, c: 1.0 / r[c]["rate"] if c in r else None)
        # Each batch's native process has its own speed as a whole (the A/A control's per-batch medians
        # spread ±5 %): against both native processes' mean that part of the reference's noise halves.
        both = against_both_natives(rounds, "rate", lambda a, b: 2.0 / (1.0 / a + 1.0 / b))
        if both:
            overhead_table("-- wall time per unit against the mean of native and native2 (their harmonic mean rate)",
                           both, lambda r, c: 1.0 / r[c]["rate"] if c in r else None)
        if any(x.get("unit_s") for x in slices):
            # The lent hosts slow a process down in spells (a slice at 55-80 % of its neighbours' rate
            # with its CPU time equal to its wall time): a median of each slice's units drops the spells
            # shorter than half a slice. It also drops the limiter's own bursts (a calibration window,
            # ~30 ms once in 10-60 s of launching: windows= in its statistics line), which the slices'
            # wall time keeps; what it keeps is what every unit pays.
            def unit_time(r, c):
                return r[c]["unit_s"] if c in r and r[c].get("unit_s") else None
            overhead_table("-- median unit time within each slice, against native", rounds, unit_time)
            both_units = against_both_natives(rounds, "unit_s", lambda a, b: (a + b) / 2)
            if both_units:
                overhead_table("-- median unit time within each slice, against the mean of native and native2",
                               both_units, unit_time)
        if any(x.get("cpu_s") for x in slices):
            overhead_table("-- CPU time per unit, all threads of the process (the host's speed cancels less "
                           "than it seems: a slower host costs CPU time too)", rounds,
                           lambda r, c: r[c]["cpu_s"] / r[c]["items"] if c in r and r[c].get("cpu_s") else None,
                           per_batch_line=False)
        fast_slices(slices)
        # Within-round noise: native2 against native per round, and the rates' drift across rounds.
        nat = [r["native"]["rate"] for _, r in sorted(rounds.items())]
        print("native rate across rounds: median %.1f, min %.1f, max %.1f (one process's slices spread this much)" % (
            statistics.median(nat), min(nat), max(nat)))
        steal = [x["steal_pct"] for x in slices if x.get("steal_pct") is not None]
        if steal:
            print("steal on the pinned CPUs per slice: median %.2f %%, 90th %.2f %%, max %.2f %%" % (
                statistics.median(steal), sorted(steal)[int(0.9 * (len(steal) - 1))], max(steal)))
        pos = {}
        for x in slices:
            pos.setdefault(x["pos"], []).append(x["rate"] / statistics.median(
                r["native"]["rate"] for key, r in rounds.items() if key[:2] == (x["dir"], x["batch"])))
        print("rate by position in the round (vs the batch's native median): %s" % ", ".join(
            "%d: %.3f" % (p, statistics.median(v)) for p, v in sorted(pos.items())))
        for pr in procs:
            fin = pr.get("final") or {}
            busy = fin.get("busy_s") or 0
            cpu = ", ".join("%s %.0f%%" % (t, 100 * s / busy) for t, s in sorted((fin.get("cpu_s") or {}).items())
                            if busy and s / busy >= 0.005)
            print("  %s b%d %-8s ready %5.1f s  busy %6.1f s  cpu/busy: %s%s" % (
                os.path.basename(pr["dir"].rstrip("/")), pr["batch"], pr["cfg"], pr.get("ready_s") or -1, busy,
                cpu, "" if pr.get("rc") == 0 else "  rc %s %s" % (pr.get("rc"), fin.get("error", ""))) + (
                "  vgpu-sm on %s" % fin["threads_on"]["vgpu-sm"] if "vgpu-sm" in (fin.get("threads_on") or {}) else ""))
        print()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("kind", choices=("small", "train", "matmul", "graph", "infer-closed", "train-sat"))
    r.add_argument("outdir")
    r.add_argument("--lib", required=True)
    r.add_argument("--pin", default="8-11")
    r.add_argument("--limit", type=int, default=90)
    r.add_argument("--slice-s", type=float, default=1.9)
    r.add_argument("--rounds", type=int, default=8)
    r.add_argument("--budget-s", type=float, default=250)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--startup-s", type=float, default=10, help="first batch's start-up estimate")
    r.add_argument("--warmup-s", type=float, default=0,
                   help="each process's unrecorded warm-up: slices until this much work (at least one)")
    r.add_argument("--one-cpu", type=int, metavar="CPU",
                   help="each process's threads on this one CPU of --pin, libvgpu's measuring thread on the rest: "
                        "the processes then share one vCPU's drift (sm_workloads.py --one-cpu)")
    r.add_argument("--cupti-cycle-config", action="store_true",
                   help="a process without libvgpu that attached CUPTI and finalized it at start (nativecc): "
                        "whether launches after cuptiFinalize cost what they cost before (cupti_cycle.py)")
    r.add_argument("--lib-env", action="append", metavar="NAME=VALUE",
                   help="more environment of the limited process (l<LIMIT>), e.g. VGPU_SM_STATS=2")
    r.add_argument("--lib2-env", action="append", metavar="NAME=VALUE",
                   help="more environment for the --lib2 process (repeatable), e.g. VGPU_CUPTI_LIBRARY=off")
    r.add_argument("--lib2", help="a fifth process: the same limit with this build of libvgpu (l<LIMIT>b)")
    r.add_argument("--events-config", action="store_true",
                   help="a fifth process: the same limit with CUDA events only (VGPU_CUPTI_LIBRARY=off)")
    q = sub.add_parser("report")
    q.add_argument("outdirs", nargs="+")
    a = p.parse_args()
    if a.what == "run":
        cmd_run(a)
    else:
        report(a.outdirs)


if __name__ == "__main__":
    main()
