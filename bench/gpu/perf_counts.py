"""Where a limited process's extra time goes: hardware and software counters per thread (issue 18,
acceptance 6):

  python3 perf_counts.py KIND OUTDIR --lib LIBVGPU [--lib2 LIBVGPU] [--pin 8-11] [--one-cpu 8]
                         [--limit 90] [--slice-s 0.5] [--rounds 12] [--batches 2] [--warmup-s 5]
                         [--seed 1]

The same whole processes as ovh_turns.py (native, native2, preload, l<LIMIT>, and with --lib2
l<LIMIT>b), taking turns on the GPU in slices of the same work, in a fresh random order each round.
After each process's warm-up this script opens Linux perf counters (perf_event_open, counting
only, no sampling) on every thread of it, and reads them around each slice: instructions,
cycles, cache and branch misses where the VM exposes them, and the kernel's task clock, context
switches, CPU migrations and page faults. Time per unit drifts with the lent hosts' speed by
tens of percent from one half-second to the next; instructions per unit do not. So a limited
process that runs more instructions per unit than preload spends them in its own code (or in
code it makes the app or the driver run); one that runs as many but more cycles stalls (cache,
locks); more context switches mean it blocks. Per thread name (the app's Python thread,
PyTorch's autograd thread, libvgpu's `vgpu-sm`, the driver's threads) it tells whose they are.
Threads that appear later are counted from the slice after they appeared.

Output: OUTDIR/counts_KIND.jsonl (a line per slice and process) and a table: per configuration
and counter, the median per unit over slices, and its difference to native's in percent.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import ovh_turns  # noqa: E402  (start_batch, slice_units, warm_up)

# perf_event_open(2): types, configs and attribute bits.
HW, SW = 0, 1
COUNTERS = [  # (name, type, config)
    ("instructions", HW, 1),
    ("cycles", HW, 0),
    ("cache_misses", HW, 3),
    ("branch_misses", HW, 5),
    ("task_clock_ns", SW, 1),
    ("ctx_switches", SW, 3),
    ("migrations", SW, 4),
    ("page_faults", SW, 2),
]
SYS_PERF_EVENT_OPEN = 298  # x86_64
FORMAT_TIMES = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
EXCLUDE_HV = 1 << 6
_libc = ctypes.CDLL(None, use_errno=True)


def open_counter(kind, config, tid):
    """A counting perf event on thread `tid`, any CPU; its fd or -errno."""
    attr = bytearray(128)  # PERF_ATTR_SIZE_VER7; the rest stays zero
    struct.pack_into("IIQQQQQ", attr, 0, kind, 128, config, 0, 0, FORMAT_TIMES, EXCLUDE_HV)
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd = _libc.syscall(SYS_PERF_EVENT_OPEN, buf, ctypes.c_int(tid), ctypes.c_int(-1), ctypes.c_int(-1),
                       ctypes.c_ulong(0))
    return fd if fd >= 0 else -ctypes.get_errno()


def read_counter(fd):
    """The count scaled for multiplexing (value x enabled / running), or None."""
    try:
        value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
    except OSError:
        return None
    if running == 0:
        return 0.0 if enabled == 0 else None
    return value * enabled / running


class ProcessCounters:
    """Counters on every thread of one process, summed per thread name."""

    def __init__(self, pid):
        self.pid = pid
        self.threads = {}  # tid -> (comm, {counter: fd})
        self.unavailable = {}  # counter -> errno of its first failure
        self.scan()

    def scan(self):
        try:
            tids = [int(t) for t in os.listdir("/proc/%d/task" % self.pid)]
        except OSError:
            return
        for tid in tids:
            if tid in self.threads:
                continue
            try:
                with open("/proc/%d/task/%d/comm" % (self.pid, tid)) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            fds = {}
            for name, kind, config in COUNTERS:
                if name in self.unavailable:
                    continue
                fd = open_counter(kind, config, tid)
                if fd < 0:
                    self.unavailable.setdefault(name, -fd)
                else:
                    fds[name] = fd
            self.threads[tid] = (comm, fds)

    def read(self):
        """{comm: {counter: count}} now (threads that ended keep their last counts out)."""
        out = {}
        for tid, (comm, fds) in self.threads.items():
            group = out.setdefault(comm, {})
            for name, fd in fds.items():
                v = read_counter(fd)
                if v is not None:
                    group[name] = group.get(name, 0.0) + v
        return out

    def close(self):
        for _, fds in self.threads.values():
            for fd in fds.values():
                os.close(fd)
        self.threads = {}


def delta(after, before):
    out = {}
    for comm, group in after.items():
        prev = before.get(comm, {})
        d = {k: v - prev[k] for k, v in group.items() if k in prev}
        if d:
            out[comm] = d
    return out


def run(a):
    os.makedirs(a.outdir, exist_ok=True)
    raw = open(os.path.join(a.outdir, "counts_%s.jsonl" % a.kind), "w")
    rng = random.Random(a.seed)
    # configs() reads these of the options (ovh_turns.py's extra processes: none here).
    a.cupti_cycle_config, a.lib2_env, a.events_config = False, None, False
    k = None
    for batch in range(1, a.batches + 1):
        workers = []
        try:
            ovh_turns.start_batch(a, rng, batch, "counts", workers)
            if k is None:
                k = ovh_turns.slice_units({w.cfg: w for w in workers}["native"], a.kind, a.slice_s)
            order = list(workers)
            rng.shuffle(order)
            ovh_turns.warm_up(order, k, a.warmup_s)
            counters = {w.cfg: ProcessCounters(w.p.pid) for w in workers}
            for cfg, pc in counters.items():
                if pc.unavailable:
                    print("%s: counters not available: %s" % (cfg, ", ".join(
                        "%s (%s)" % (n, os.strerror(e)) for n, e in sorted(pc.unavailable.items()))), flush=True)
            for r in range(1, a.rounds + 1):
                rng.shuffle(order)
                for pos, w in enumerate(order):
                    pc = counters[w.cfg]
                    pc.scan()
                    before = pc.read()
                    el, items, cpu, steal, _ = w.run(k)
                    d = delta(pc.read(), before)
                    raw.write(json.dumps({"batch": batch, "round": r, "pos": pos, "cfg": w.cfg, "units": k,
                                          "elapsed": el, "items": items, "cpu_s": cpu, "counts": d}) + "\n")
                raw.flush()
            for pc in counters.values():
                pc.close()
        finally:
            for w in workers:
                w.stop()
        print("batch %d done" % batch, flush=True)
    raw.close()
    report(a.outdir, a.kind)


def report(outdir, kind):
    rows = [json.loads(ln) for ln in open(os.path.join(outdir, "counts_%s.jsonl" % kind))]
    cfgs = sorted({r["cfg"] for r in rows}, key=lambda c: (c != "native", c != "native2", c != "preload", c))
    names = [n for n, _, _ in COUNTERS]

    def per_unit(r, name, comm=None):
        groups = r["counts"].values() if comm is None else [r["counts"].get(comm, {})]
        vals = [g[name] for g in groups if name in g]
        return sum(vals) / r["units"] if vals else None

    def medians(comm=None):
        table = {}
        for c in cfgs:
            table[c] = {"time_ms": statistics.median(1000 * r["elapsed"] / r["units"] for r in rows if r["cfg"] == c)}
            for n in names:
                xs = [v for r in rows if r["cfg"] == c for v in [per_unit(r, n, comm)] if v is not None]
                if xs:
                    table[c][n] = statistics.median(xs)
        return table

    def show(title, table, keys):
        print(title)
        print("%-14s" % "per unit" + "".join("%20s" % c for c in cfgs))
        for key in keys:
            nat = table.get("native", {}).get(key)
            cells = []
            for c in cfgs:
                v = table[c].get(key)
                if v is None:
                    cells.append("%20s" % "-")
                elif c == "native" or not nat:
                    cells.append("%20.5g" % v)
                else:
                    cells.append("%12.5g %+6.1f%%" % (v, 100 * (v / nat - 1)))
            print("%-14s" % key + "".join(cells))

    n_rounds = len({(r["batch"], r["round"]) for r in rows})
    print("== %s: %d rounds, medians over slices of the work per unit, difference to native" % (kind, n_rounds))
    show("-- whole process", medians(), ["time_ms"] + names)
    comms = {}
    for r in rows:
        for comm, g in r["counts"].items():
            comms[comm] = comms.get(comm, 0.0) + g.get("task_clock_ns", 0.0)
    for comm in sorted(comms, key=lambda c: -comms[c])[:6]:
        show("-- thread %s" % comm, medians(comm), [n for n in names if n != "migrations"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=("small", "train"))
    p.add_argument("outdir")
    p.add_argument("--lib", required=True)
    p.add_argument("--lib2", help="a fifth process: the same limit with this build of libvgpu (l<LIMIT>b)")
    p.add_argument("--pin", default="8-11")
    p.add_argument("--one-cpu", type=int, default=8)
    p.add_argument("--limit", type=int, default=90)
    p.add_argument("--slice-s", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--batches", type=int, default=2)
    p.add_argument("--warmup-s", type=float, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--report", action="store_true", help="only print the table of OUTDIR's counts")
    a = p.parse_args()
    if a.report:
        report(a.outdir, a.kind)
    else:
        run(a)


if __name__ == "__main__":
    main()
