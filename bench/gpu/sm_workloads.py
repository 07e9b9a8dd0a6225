"""One tenant of the SM-limit v2 benchmark (bench/gpu/sm_v2_bench.sh); runs alone too:

  START_AT=<epoch s> END_AT=<epoch s> python3 sm_workloads.py KIND [options]

Everything before START_AT is warm-up (default: --warmup s after setup); the window
[START_AT, END_AT) is measured (default --window s) and one JSON line is printed at the end.

KIND
  train         a small transformer LM (embedding, --layers pre-norm blocks, LM head; random init,
                random tokens made on the GPU) trained with bf16 autocast and AdamW, loss.item()
                every step (a host sync, as real loops log). Python overhead makes it partly
                host-bound: the defaults aim at ~60 % GPU busy natively (tune with --profile).
  train-sat     the same loop with a larger batch and sequence: the GPU ~100 % busy.
  infer-open    batch-1 forward (bf16, inference_mode, no mask) of a larger encoder, one request
                ~5-10 ms of GPU; requests arrive at --rate per second (Poisson, seeded; --arrivals
                fixed: evenly spaced) and are served in order; latency = completion - arrival, so
                queueing behind a late request counts.
  infer-closed  the same forward back to back.
  matmul, graph, small   the loops of sm_limit_workload.py (saturating matmul, CUDA graph replay,
                launch-bound 1 MiB elementwise ops).

--profile S      run natively under torch.profiler (CUDA activity) for S s after the warm-up: the
                 GPU time per unit (step, request, iteration) = union of kernel intervals / units,
                 U_profiled = that union / wall time; then S s more without the profiler, whose
                 rate x GPU time per unit is U (the profiler slows host-bound loops). Uses CUPTI:
                 never together with libvgpu.
--with-profiler  the normal run with torch.profiler active throughout (an app that itself uses
                 CUPTI); also reports the kernel union the profiler saw over its whole run.
--serve          turns (bench/gpu/ovh_turns.py): after the first two units print "ready S" (S = s
                 since start), then per stdin line "run K" run K units and print "done SECONDS
                 ITEMS CPU_S STEAL_PCT UNIT_S" (CPU of all the process's threads meanwhile; the
                 hypervisor's steal time on its CPUs, -1 if unknown; the median unit's seconds);
                 on "quit" (or end of input) print one JSON line (CPU s per thread, busy s).
VGPU_BENCH_CUPTI_CYCLE=1 (environment): before the warm-up, three units each with CUPTI's kernel
                 records on, then cuptiFinalize (bench/gpu/cupti_cycle.py; never with libvgpu).
--toggle-ab OFFSET  after --warmup s, the in-process A/B of toggle_ab.py: --toggle-pairs pairs of
                 slices of --toggle-units units, the limit enforced in one and lifted in the other
                 (the region's sm_sharing flag at byte OFFSET; policy default); one JSON line.
--one-cpu CPU    --serve, --toggle-ab: before "ready" (the A/B) move every thread but libvgpu's measuring thread onto CPU
                 (one of the process's CPUs), that one onto the others.
--units N        fixed work instead of a window (START_AT/END_AT ignored): after the first two
                 units and --warmup s more, run exactly N units; rate = items / their wall time
                 (perf_counter), block_rates = the rates of its ten consecutive tenths, steal_pct =
                 the hypervisor's steal time on the process's CPUs during them (/proc/stat).
"""
import argparse
import glob
import json
import os
import random
import statistics
import sys
import tempfile
import time

STARTED = time.time()  # setup_s in the result: how much warm-up (WARM) the tenant needs

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sm_limit_workload  # noqa: E402  (the matmul/graph/small loop bodies)

# Model and load defaults per kind; the ones to tune on a new GPU (see sm_v2_bench.sh part tune).
DEFAULTS = {
    "train": dict(layers=24, d_model=512, batch=24, seq=256),
    "train-sat": dict(layers=24, d_model=512, batch=64, seq=512),
    "infer-open": dict(layers=16, d_model=1024, batch=1, seq=4096),
    "infer-closed": dict(layers=16, d_model=1024, batch=1, seq=4096),
}
LEGACY = ("matmul", "graph", "small")


class Block(nn.Module):
    """Pre-norm transformer block: attention through scaled_dot_product_attention, GELU MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, causal):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab, d, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, max(1, d // 64)) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, causal):
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, causal)
        return self.head(self.norm(x))


def make_train(a, dev):
    with dev:  # initialised on the GPU: on one pinned core a CPU init took seconds
        model = TinyLM(a.vocab, a.d_model, a.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def unit():
        tokens = torch.randint(a.vocab, (a.batch, a.seq + 1), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens[:, :-1], causal=True)
            loss = F.cross_entropy(logits.reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss.item()  # the host sync a real loop pays for logging
        return 1
    return unit


def make_infer(a, dev):
    with dev:
        model = TinyLM(a.vocab, a.d_model, a.layers).to(torch.bfloat16).eval()
    tokens = torch.randint(a.vocab, (a.batch, a.seq), device=dev)

    def unit():
        with torch.inference_mode():
            model(tokens, causal=False)
        torch.cuda.synchronize()
        return 1
    return unit


def make_legacy(kind, dev):
    step, per_step, sync_every = sm_limit_workload.make_step(kind, dev)

    def unit():
        for _ in range(sync_every):
            step()
        torch.cuda.synchronize()
        return sync_every * per_step
    return unit


def closed_loop(unit, start_at, end_at):
    """Runs unit() back to back until one ends at or after end_at. Items finished inside
    [start_at, end_at) count, per second of the window; latencies are those of units started in
    it. Also returns every item run (what a profiler over the whole call saw)."""
    per_second = [0] * max(1, round(end_at - start_at))
    lat, ran = [], 0
    while True:
        t0 = time.time()
        n = unit()
        t1 = time.time()
        ran += n
        if start_at <= t1 < end_at:
            per_second[min(int(t1 - start_at), len(per_second) - 1)] += n
            if t0 >= start_at:
                lat.append(t1 - t0)
        if t1 >= end_at:
            return per_second, lat, ran


def arrivals(a, warm_from, start_at, end_at):
    """(arrival time, measured) pairs: evenly spaced warm-up arrivals until start_at, then the
    measured ones from start_at, drawn with a fixed seed so every run sees the same sequence."""
    t = warm_from
    while t + 1.0 / a.rate < start_at:
        t += 1.0 / a.rate
        yield t, False
    rng, t = random.Random(a.seed), start_at
    while True:
        t += 1.0 / a.rate if a.arrivals == "fixed" else rng.expovariate(a.rate)
        if t >= end_at:
            return
        yield t, True


def open_loop(unit, a, warm_from, start_at, end_at):
    """Serves requests in arrival order. Requests that arrived in the window and are still queued
    a.drain s after end_at are 'unserved'; their latency counts as (that moment - arrival), a
    lower bound, so a stalled tenant cannot look fast."""
    stop_at = end_at + a.drain
    per_second = [0] * max(1, round(end_at - start_at))
    lat, service, unserved, served = [], [], 0, 0
    for arrival, measured in arrivals(a, warm_from, start_at, end_at):
        now = time.time()
        if now >= stop_at:
            if measured:
                unserved += 1
                lat.append(stop_at - arrival)
            continue
        if now < arrival:
            time.sleep(arrival - now)
        t0 = time.time()
        unit()
        t1 = time.time()
        if not measured:
            continue
        served += 1
        lat.append(t1 - arrival)
        service.append(t1 - t0)
        if t1 < end_at:
            per_second[int(t1 - start_at)] += 1
    return per_second, lat, service, unserved, served


def thread_cpu():
    """CPU seconds per thread name of this process (/proc/self/task/*/stat: utime + stime)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for task in glob.glob("/proc/self/task/*/stat"):
        try:
            with open(task) as f:
                s = f.read()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        fields = s[s.rindex(")") + 2:].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_ticks(cpus):
    """(steal, total) jiffies of the given CPUs, from /proc/stat (None where unreadable)."""
    steal = total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *vals = line.split()
                if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                    v = [int(x) for x in vals]
                    steal += v[7] if len(v) > 7 else 0
                    total += sum(v[:8])
    except (OSError, ValueError):
        return None
    return steal, total


def pin_to_one_cpu(one):
    """--one-cpu: every thread of the process but libvgpu's (vgpu-sm, the measuring thread, and
    vgpu-cupti, CUPTI's worker that it starts) onto CPU `one`, those onto the process's other CPUs.
    The lent VMs' vCPUs each drift in speed on their own (bench/gpu/host_drift.py), so processes
    whose launching threads sit on different vCPUs differ as a whole; on one vCPU the processes
    taking turns share its drift. Threads made later inherit their maker's CPUs.
    Returns {thread name: the CPUs it was put on}."""
    rest = sorted(set(os.sched_getaffinity(0)) - {one}) or [one]
    placed = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                comm = f.read().strip()
            cpus = rest if comm in ("vgpu-sm", "vgpu-cupti") else [one]
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # the thread ended meanwhile
            continue
        placed.setdefault(comm, cpus)
    return {k: ",".join(map(str, v)) for k, v in placed.items()}


def serve(unit, one_cpu=None):
    """--serve: work only when told, so that several whole processes can take turns on one GPU."""
    placed = pin_to_one_cpu(one_cpu) if one_cpu is not None else None
    print("ready %.3f" % (time.time() - STARTED), flush=True)
    cpu0, busy, runs = thread_cpu(), 0.0, 0
    cpus = sorted(os.sched_getaffinity(0))
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        if cmd[0] == "run":
            items = 0
            ticks0 = cpu_ticks(cpus)
            p0 = time.process_time()  # every thread of the process: the limiter's too
            t0 = time.perf_counter()
            ends = []
            for _ in range(int(cmd[1])):
                items += unit()
                ends.append(time.perf_counter())
            elapsed = ends[-1] - t0 if ends else 0.0
            # Each unit ends in a synchronisation: its time is the step's. Their median sees through
            # the lent hosts' slow spells that cover part of a slice (not through a whole slow slice).
            unit_med = statistics.median(b - a for a, b in zip([t0] + ends[:-1], ends)) if ends else 0.0
            proc_cpu = time.process_time() - p0
            ticks1 = cpu_ticks(cpus)
            steal = (100.0 * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1])
                     if ticks0 and ticks1 and ticks1[1] > ticks0[1] else -1.0)
            busy += elapsed
            runs += 1
            print("done %.6f %d %.6f %.2f %.7f" % (elapsed, items, proc_cpu, steal, unit_med), flush=True)
    cpu1 = thread_cpu()
    print(json.dumps({"pid": os.getpid(), "busy_s": round(busy, 3), "runs": runs, "threads_on": placed,
                      "cpu_s": {k: round(v - cpu0.get(k, 0.0), 3) for k, v in cpu1.items()
                                if v - cpu0.get(k, 0.0) > 0}}), flush=True)


def pct(xs, p):
    """Nearest-rank percentile in ms."""
    if not xs:
        return None
    xs = sorted(xs)
    return round(1000 * xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))], 3)


def kernel_busy(prof):
    """Union of the kernel intervals of a finished torch.profiler run: (seconds, kernels)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "kernel" and "dur" in e)
    busy, end = 0.0, float("-inf")
    for s, e in spans:
        if e > end:
            busy += e - max(s, end)
            end = e
    return busy / 1e6, len(spans)


def cuda_profiler():
    from torch.profiler import ProfilerActivity, profile
    return profile(activities=[ProfilerActivity.CUDA])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=sorted(DEFAULTS) + list(LEGACY))
    p.add_argument("--layers", type=int)
    p.add_argument("--d-model", type=int)
    p.add_argument("--batch", type=int)
    p.add_argument("--seq", type=int)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--rate", type=float, default=40.0, help="infer-open: requests per second")
    p.add_argument("--arrivals", choices=("poisson", "fixed"), default="poisson")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--drain", type=float, default=5.0,
                   help="infer-open: seconds after END_AT to serve the window's queued requests")
    p.add_argument("--warmup", type=float, default=5.0, help="without START_AT: warm-up seconds")
    p.add_argument("--window", type=float, default=8.0, help="without END_AT: window seconds")
    p.add_argument("--profile", type=float, metavar="S")
    p.add_argument("--with-profiler", action="store_true")
    p.add_argument("--units", type=int, metavar="N", help="fixed work: run N units after the warm-up")
    p.add_argument("--serve", action="store_true", help="turns: run units when told on stdin")
    p.add_argument("--one-cpu", type=int, metavar="CPU",
                   help="--serve, --toggle-ab: every thread but libvgpu's measuring thread on this CPU (of the process's)")
    p.add_argument("--toggle-ab", type=int, metavar="OFFSET",
                   help="in-process A/B of the limit enforced vs lifted (toggle_ab.py); OFFSET = byte offset of "
                        "the device record's sm_sharing in the region file")
    p.add_argument("--toggle-pairs", type=int, default=100)
    p.add_argument("--toggle-units", type=int, default=20, help="units per slice of --toggle-ab")
    a = p.parse_args()
    if a.units is not None and (a.units < 10 or a.kind == "infer-open" or a.profile):
        p.error("--units needs N >= 10 and a closed loop without --profile")
    if a.toggle_ab is not None and (a.toggle_pairs < 2 or a.toggle_units < 1 or a.serve or a.units or a.profile):
        p.error("--toggle-ab needs --toggle-pairs >= 2 and --toggle-units >= 1, without --serve, --units or --profile")
    for k, v in DEFAULTS.get(a.kind, {}).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def main():
    a = parse_args()
    dev = torch.device("cuda")
    if a.kind in ("train", "train-sat"):
        unit, what = make_train(a, dev), "steps"
    elif a.kind in ("infer-open", "infer-closed"):
        unit, what = make_infer(a, dev), "requests"
    else:
        unit, what = make_legacy(a.kind, dev), "iterations"
    made, done = unit, [0]

    def unit():  # counts every unit of the run, warm-up included: the limiter charges them all
        n = made()
        done[0] += n
        return n

    opened = cuda_profiler() if a.with_profiler else None
    if opened:
        opened.__enter__()
        prof_t0 = time.time()

    if os.environ.get("VGPU_BENCH_CUPTI_CYCLE") == "1":  # ovh_turns.py --cupti-cycle-config
        import cupti_cycle
        for _ in range(3):  # as a limited process attaches at its start and for its windows
            with cupti_cycle.Attached():
                unit()
    # Warm-up: cuBLAS/SDPA heuristics, allocator, the limiter's state; then until START_AT.
    for _ in range(2):
        unit()
    if a.serve:
        serve(unit, a.one_cpu)
        return
    if a.toggle_ab is not None:
        import toggle_ab
        warm_until = time.time() + a.warmup
        while time.time() < warm_until:
            unit()
        placed = pin_to_one_cpu(a.one_cpu) if a.one_cpu is not None else None
        res = toggle_ab.run(unit, a.toggle_ab, a.toggle_pairs, a.toggle_units, a.seed)
        res.update(kind=a.kind, pid=os.getpid(), threads_on=placed)
        print(json.dumps(res), flush=True)
        return
    ready = time.time()
    if a.units:  # fixed work: the warm-up counts from here, whenever the process got here
        start_at = ready + a.warmup
        end_at = start_at
    else:
        start_at = float(os.environ.get("START_AT") or ready + a.warmup)
        end_at = float(os.environ.get("END_AT") or start_at + a.window)
    res = {"kind": a.kind, "pid": os.getpid(), "unit": what, "args": vars(a),
           "start_at": start_at, "end_at": end_at, "late_s": round(ready - start_at, 3),
           "setup_s": round(ready - STARTED, 3)}
    if a.kind != "infer-open":
        while time.time() < start_at:
            unit()
    cpu0, cpu_t0 = thread_cpu(), time.time()

    if a.profile:
        # Native calibration: the profiled stretch is the whole call, so its kernels and its
        # units match one to one (the unit that crosses the end is in both). CUPTI slows the
        # launches (a host-bound loop ran 2.5x slower on an H100), so U comes from the same loop
        # run unprofiled: its rate x the GPU time per unit. The unprofiled stretch goes first:
        # after the profiler stopped, the launches stayed slow.
        def run():
            t = time.time()
            if a.kind == "infer-open":
                n = open_loop(unit, a, t, t, t + a.profile)[4]
            else:
                n = closed_loop(unit, t, t + a.profile)[2]
            torch.cuda.synchronize()
            return n, time.time() - t
        n_native, wall_native = run()
        with cuda_profiler() as prof:
            n, wall = run()
        busy, kernels = kernel_busy(prof)
        g = busy / max(n, 1)
        res.update(profile_s=round(wall, 3), U_profiled=round(busy / wall, 4), units=n,
                   gpu_ms_per_unit=round(1000 * g, 4), rate_profiled=round(n / wall, 3),
                   kernels=kernels, rate_native=round(n_native / wall_native, 3),
                   U=round(g * n_native / wall_native, 4))
    elif a.units:
        cpus = os.sched_getaffinity(0)
        ticks0 = cpu_ticks(cpus)
        per_block = a.units // 10
        marks, items = [], 0
        t0 = time.perf_counter()
        for k in range(a.units):
            items += unit()
            if (k + 1) % per_block == 0 or k + 1 == a.units:
                marks.append((time.perf_counter(), items))
        elapsed = time.perf_counter() - t0
        ticks1 = cpu_ticks(cpus)
        prev_t, prev_n, blocks = t0, 0, []
        for t, n in marks:
            if t > prev_t:
                blocks.append(round((n - prev_n) / (t - prev_t), 2))
            prev_t, prev_n = t, n
        res.update(rate=items / elapsed, elapsed_s=round(elapsed, 4), items=items, block_rates=blocks,
                   cpus=sorted(cpus), end_at=time.time())
        if ticks0 and ticks1 and ticks1[1] > ticks0[1]:
            res["steal_pct"] = round(100.0 * (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1]), 2)
    elif a.kind == "infer-open":
        per_second, lat, service, unserved, served = open_loop(unit, a, ready, start_at, end_at)
        res.update(rate=sum(per_second) / (end_at - start_at), per_second=per_second,
                   requests=served + unserved, served=served, unserved=unserved,
                   p50_ms=pct(lat, 50), p90_ms=pct(lat, 90), p99_ms=pct(lat, 99), max_ms=pct(lat, 100),
                   service_p50_ms=pct(service, 50), service_p99_ms=pct(service, 99))
    else:
        per_second, lat, _ = closed_loop(unit, start_at, end_at)
        res.update(rate=sum(per_second) / (end_at - start_at), per_second=per_second,
                   p50_ms=pct(lat, 50), p99_ms=pct(lat, 99), max_ms=pct(lat, 100))

    # Each thread's CPU from the window's start on, in % of one core (the limiter's thread is "vgpu-sm",
    # CUPTI's "vgpu-cupti").
    cpu1, span = thread_cpu(), max(time.time() - cpu_t0, 1e-3)
    res["cpu_pct"] = {k: round(100 * (v - cpu0.get(k, 0.0)) / span, 1) for k, v in cpu1.items()
                      if v - cpu0.get(k, 0.0) > 0}
    if opened:
        torch.cuda.synchronize()
        opened.__exit__(None, None, None)
        wall = time.time() - prof_t0
        busy, kernels = kernel_busy(opened)
        res.update(profiler_busy_whole_run=round(busy / wall, 4), profiler_kernels=kernels,
                   profiler_s=round(wall, 3))
    res["units_total"] = done[0]
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
