"""Where the launch-bound loop's speed drift on the GPU machines comes from (diagnostic).

The `small` loop (1 MiB `add_`, blocks of 200 launches, synchronised) runs without libvgpu for a
while; beside it a sampler records, every 250 ms, the steal time and busy time of each CPU
(/proc/stat), the clock the kernel reports for the loop's core, and the rate of a fixed pure-Python
spin loop on a core of its own. Printed: the loop's rate per second and how far each sampled
quantity follows it (correlation over the 1 s bins), plus the drift of each (max/min).

  python3 host_drift.py loop SECONDS OUT.jsonl     # the loop, one line per block
  python3 host_drift.py sample OUT.jsonl            # the sampler, until killed
  python3 host_drift.py cpuloop SECONDS OUT.jsonl   # the loop's Python side without the GPU
  python3 host_drift.py report LOOP.jsonl SAMPLES.jsonl [LOOP_CORE]
"""
import json
import os
import statistics
import sys
import time

from host_meter import spin_rate  # the pure-Python spin loop the bench's CPU meter uses

ITERS = 200


def loop(seconds, out, gpu=True):
    if gpu:
        import torch
        x = torch.zeros(256 * 1024, device=torch.device("cuda"), dtype=torch.float32)
        step, sync = (lambda: x.add_(1.0)), torch.cuda.synchronize
    else:
        import torch
        x = torch.zeros(256 * 1024, dtype=torch.float32)
        y = torch.zeros(16)  # a CPU op of about the GPU launch's Python cost, not its data

        def step():
            y.add_(1.0)
        sync = (lambda: None)
    for _ in range(50):
        step()
    sync()
    end = time.time() + seconds
    with open(out, "w") as f:
        while True:
            t0 = time.time()
            for _ in range(ITERS):
                step()
            sync()
            t1 = time.time()
            f.write(json.dumps({"t": t1, "d": t1 - t0}) + "\n")
            if t1 >= end:
                break


def read_stat():
    cpus = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                p = line.split()
                v = [int(x) for x in p[1:]]
                busy = v[0] + v[1] + v[2] + v[5] + v[6]
                steal = v[7] if len(v) > 7 else 0
                cpus[p[0]] = (busy, steal, sum(v))
    return cpus


def read_mhz():
    mhz = {}
    try:
        with open("/proc/cpuinfo") as f:
            cpu = None
            for line in f:
                if line.startswith("processor"):
                    cpu = int(line.split(":")[1])
                elif line.startswith("cpu MHz") and cpu is not None:
                    mhz["cpu%d" % cpu] = float(line.split(":")[1])
    except OSError:
        pass
    return mhz


def sample(out):
    with open(out, "w") as f:
        while True:
            rate, t1 = spin_rate(0.25)
            f.write(json.dumps({"t": t1, "spin": rate, "stat": read_stat(),
                                "mhz": read_mhz()}) + "\n")
            f.flush()


def corr(a, b):
    if len(a) < 3 or statistics.pstdev(a) == 0 or statistics.pstdev(b) == 0:
        return float("nan")
    ma, mb = statistics.mean(a), statistics.mean(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b)) / len(a)
    return cov / (statistics.pstdev(a) * statistics.pstdev(b))


def report(loop_path, samples_path, core):
    blocks = [json.loads(line) for line in open(loop_path)]
    samples = [json.loads(line) for line in open(samples_path)]
    t0 = blocks[0]["t"]
    bins = {}
    for b in blocks:
        k = int(b["t"] - t0)
        bins.setdefault(k, [0, 0.0])
        bins[k][0] += ITERS
        bins[k][1] += b["d"]
    secs = sorted(k for k in bins if bins[k][1] > 0.5)
    rate = [bins[k][0] / bins[k][1] for k in secs]
    series = {"spin": [], "steal_core": [], "steal_all": [], "busy_other": [], "mhz": []}
    cpu = "cpu%d" % core
    for k in secs:
        lo, hi = t0 + k, t0 + k + 1
        inside = [s for s in samples if lo - 0.25 <= s["t"] <= hi + 0.25]
        if len(inside) < 2:
            for v in series.values():
                v.append(float("nan"))
            continue
        a, b = inside[0], inside[-1]
        series["spin"].append(statistics.mean(s["spin"] for s in inside[1:]))
        st = lambda s, c, i: s["stat"].get(c, (0, 0, 1))[i]
        tot = st(b, cpu, 2) - st(a, cpu, 2) or 1
        series["steal_core"].append(100.0 * (st(b, cpu, 1) - st(a, cpu, 1)) / tot)
        all_steal = sum(st(b, c, 1) - st(a, c, 1) for c in b["stat"])
        all_tot = sum(st(b, c, 2) - st(a, c, 2) for c in b["stat"]) or 1
        series["steal_all"].append(100.0 * all_steal / all_tot)
        other = [c for c in b["stat"] if c != cpu]
        series["busy_other"].append(100.0 * sum(st(b, c, 0) - st(a, c, 0) for c in other) /
                                    (sum(st(b, c, 2) - st(a, c, 2) for c in other) or 1))
        series["mhz"].append(statistics.mean(s["mhz"].get(cpu, 0.0) for s in inside))
    print("  loop it/s per second: min %.0f  median %.0f  max %.0f  (max/min %.2f, %d s)" % (
        min(rate), statistics.median(rate), max(rate), max(rate) / min(rate), len(rate)))
    print("  5 s means: %s" % " ".join("%.0f" % statistics.mean(rate[i:i + 5])
                                        for i in range(0, len(rate) - 4, 5)))
    for name, v in series.items():
        ok = [(r, x) for r, x in zip(rate, v) if x == x]
        if not ok:
            continue
        xs = [x for _, x in ok]
        print("  %-10s min %9.2f median %9.2f max %9.2f   corr with loop %+.2f" % (
            name, min(xs), statistics.median(xs), max(xs), corr([r for r, _ in ok], xs)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "loop":
        loop(float(sys.argv[2]), sys.argv[3])
    elif cmd == "cpuloop":
        loop(float(sys.argv[2]), sys.argv[3], gpu=False)
    elif cmd == "sample":
        sample(sys.argv[2])
    elif cmd == "report":
        core = sys.argv[4] if len(sys.argv) > 4 else "2"
        report(sys.argv[2], sys.argv[3], int(core) if core.isdigit() else -1)  # -1: unpinned
