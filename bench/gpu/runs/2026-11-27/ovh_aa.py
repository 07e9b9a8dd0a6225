"""Paired per-round overhead of sm_v2_bench.sh's overhead parts with the A/A control (OVH_AA=1),
and where the spread between processes comes from:

  python3 bench/gpu/runs/2026-11-27/ovh_aa.py small|train OUT

Per round: each configuration's slowdown against the native process of the same round
(100 * (1 - rate / native), positive = slower), also against the mean of the round's two native
processes; native2 against native is the A/A control (the resolution floor). Per process: the
run order, the window's per-second spread (CV, within the process) and the main thread's CPU %,
to tell drift inside a process from an offset between processes.
"""
import glob
import json
import os
import statistics
import sys

kind, out = sys.argv[1], sys.argv[2]
raw = os.path.join(out, "raw")
procs = []  # (start, round, cfg, result)
for spec in glob.glob(os.path.join(raw, "ovh_%s_*.r*.spec" % kind)):
    tag = os.path.basename(spec)[:-5]
    grp, rep = tag.rsplit(".r", 1)
    cfg = grp[len("ovh_%s_" % kind):]
    head = open(spec).read().split()
    try:
        res = json.loads(open(os.path.join(raw, tag + ".0.json")).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        res = {}
    procs.append((float(head[2]), int(rep), cfg, res))
procs.sort()
if not procs:
    sys.exit("no ovh_%s_* results in %s" % (kind, raw))
cfgs = ["native", "native2"] + sorted({p[2] for p in procs} - {"native", "native2"})
rate = {(p[1], p[2]): p[3].get("rate") for p in procs}
rounds = sorted({p[1] for p in procs})


def fmt(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return "median %+.2f %% [%+.2f … %+.2f], median |x| %.2f %%" % (
        statistics.median(xs), min(xs), max(xs), statistics.median([abs(x) for x in xs]))


print("== per process, in run order (t from the first window's start)")
t0 = procs[0][0]
print("%7s %5s %-8s %10s %8s %8s %7s %s" % ("t s", "round", "config", "rate/s", "CV %", "main CPU", "late s",
                                           "per-second rates"))
for start, rep, cfg, res in procs:
    ps = res.get("per_second") or []
    cv = 100 * statistics.pstdev(ps) / statistics.mean(ps) if len(ps) > 1 and statistics.mean(ps) else None
    cpu = (res.get("cpu_pct") or {}).get("python3")
    print("%7.0f %5d %-8s %10s %8s %8s %7s %s" % (
        start - t0, rep, cfg, "%.2f" % res["rate"] if res.get("rate") else "-", "%.2f" % cv if cv is not None else "-",
        "%.1f" % cpu if cpu is not None else "-", res.get("late_s", "-"), " ".join(str(x) for x in ps)))

print("\n== slowdown vs the native process of the same round (%), positive = slower")
print("%-8s %s" % ("round", " ".join("%9s" % c for c in cfgs)))
for r in rounds:
    n = rate.get((r, "native"))
    print("%-8d %s" % (r, " ".join("%9s" % ("%+.2f" % (100 * (1 - rate[(r, c)] / n)) if n and rate.get((r, c)) else "-")
                                  for c in cfgs)))
for c in cfgs[1:]:
    xs = [100 * (1 - rate[(r, c)] / rate[(r, "native")]) for r in rounds
          if rate.get((r, c)) and rate.get((r, "native"))]
    print("%-8s vs native:          %s" % (c, fmt(xs)))

print("\n== slowdown vs the mean of the round's two native processes (%)")
for c in cfgs[2:]:
    xs = []
    for r in rounds:
        n1, n2, v = rate.get((r, "native")), rate.get((r, "native2")), rate.get((r, c))
        if n1 and n2 and v:
            xs.append(100 * (1 - v / ((n1 + n2) / 2)))
    print("%-8s vs mean(native, native2): %s  (%s)" % (c, fmt(xs), " ".join("%+.2f" % x for x in xs)))

print("\n== rates per configuration over all rounds (between-process spread)")
for c in cfgs:
    xs = [rate[(r, c)] for r in rounds if rate.get((r, c))]
    if xs:
        m = statistics.mean(xs)
        print("%-8s n %d  median %.2f  min %.2f  max %.2f  (max-min)/median %.2f %%  CV %.2f %%" % (
            c, len(xs), statistics.median(xs), min(xs), max(xs), 100 * (max(xs) - min(xs)) / statistics.median(xs),
            100 * statistics.pstdev(xs) / m if len(xs) > 1 else 0))
cvs = [100 * statistics.pstdev(p[3]["per_second"]) / statistics.mean(p[3]["per_second"]) for p in procs
       if len(p[3].get("per_second") or []) > 1 and statistics.mean(p[3]["per_second"])]
if cvs:
    print("within a process: per-second CV median %.2f %% [%.2f … %.2f]" % (statistics.median(cvs), min(cvs), max(cvs)))
