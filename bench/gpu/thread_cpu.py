"""Where a running process's CPU goes, per thread, over a window (issue 18: what a limited
training tenant pinned to one core pays). Reads /proc/PID/task/*/schedstat (time on the CPU,
time waiting on a run queue, number of slices: nanoseconds, scheduler's own accounting) at
START and at END (epoch seconds) and prints one JSON line:

  python3 thread_cpu.py PID START END [LABEL]

{"label":…, "window_s":…, "threads":[{"tid", "name", "cpu_ms", "wait_ms", "slices"}…]}, threads
sorted by cpu_ms; a thread that started or ended inside the window counts from/to its first/last
reading (its name carries "+" or "-").
"""
import glob
import json
import os
import sys
import time


def snapshot(pid):
    out = {}
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(task + "/comm") as f:
                name = f.read().strip()
            with open(task + "/schedstat") as f:
                cpu, wait, slices = (int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
        out[int(os.path.basename(task))] = (name, cpu, wait, slices)
    return out


def sleep_until(t):
    while True:
        left = t - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.5))


def main():
    pid, start, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    label = sys.argv[4] if len(sys.argv) > 4 else str(pid)
    sleep_until(start)
    a = snapshot(pid)
    t0 = time.time()
    sleep_until(end)
    b = snapshot(pid)
    t1 = time.time()
    rows = []
    for tid in sorted(set(a) | set(b)):
        name, cpu1, wait1, sl1 = b.get(tid) or a[tid]
        _, cpu0, wait0, sl0 = a.get(tid) or (name, 0, 0, 0)
        if tid not in a:
            name += "+"
        if tid not in b:
            name += "-"
        rows.append({"tid": tid, "name": name, "cpu_ms": round((cpu1 - cpu0) / 1e6, 1),
                     "wait_ms": round((wait1 - wait0) / 1e6, 1), "slices": sl1 - sl0})
    rows.sort(key=lambda r: -r["cpu_ms"])
    print(json.dumps({"label": label, "window_s": round(t1 - t0, 3), "threads": rows}), flush=True)


if __name__ == "__main__":
    main()
