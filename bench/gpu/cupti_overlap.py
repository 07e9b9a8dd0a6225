#!/usr/bin/env python3
"""Compares rules that split a time-sliced GPU between tenants from their CUPTI kernel records.

Usage: cupti_overlap.py SOLO_A SOLO_B PAIR_A PAIR_B
Each file is written by `cupti_probe tenant` (one record per kernel: start end, CLOCK_MONOTONIC ns).
The solo runs give each kernel's duration alone; the truth of a pair run is the work each tenant
completed in the common window times that solo duration. Rules compared:
  raw      each tenant's union of its own records (what it would charge without any split)
  equal    time covered by several tenants' records is divided equally among them
  shortest time covered by several tenants' records goes to the shortest record covering it
           (a record is stretched when its kernel was preempted by another context's time slice)
"""
import statistics
import sys


def load(path):
    head = {}
    recs = []
    with open(path) as f:
        for line in f:
            if line.startswith('#'):
                parts = line[1:].split()
                head = {parts[i]: int(parts[i + 1]) for i in range(0, len(parts) - 1, 2)}
                continue
            s, e = line.split()
            recs.append((int(s), int(e)))
    recs.sort()
    return head, recs


def clip(recs, lo, hi):
    return [(max(s, lo), min(e, hi), e - s) for s, e in recs if e > lo and s < hi]


def union(recs):
    total, cur_s, cur_e = 0, None, None
    for s, e, _ in recs:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def attribute(tenants):
    """tenants: list of clipped record lists -> (equal, shortest) time per tenant."""
    events = []
    for t, recs in enumerate(tenants):
        for s, e, d in recs:
            events.append((s, 1, t, d))
            events.append((e, -1, t, d))
    events.sort(key=lambda x: (x[0], x[1]))
    active = [dict() for _ in tenants]  # duration -> count, per tenant
    equal = [0.0] * len(tenants)
    short = [0.0] * len(tenants)
    last = None
    for time, kind, t, d in events:
        if last is not None and time > last:
            seg = time - last
            busy = [i for i in range(len(tenants)) if active[i]]
            if busy:
                for i in busy:
                    equal[i] += seg / len(busy)
                mins = {i: min(active[i]) for i in busy}
                best = min(mins.values())
                winners = [i for i in busy if mins[i] <= best * 1.001]
                for i in winners:
                    short[i] += seg / len(winners)
        last = time
        if kind == 1:
            active[t][d] = active[t].get(d, 0) + 1
        else:
            active[t][d] -= 1
            if active[t][d] == 0:
                del active[t][d]
    return equal, short


def main():
    solo = [load(p) for p in sys.argv[1:3]]
    pair = [load(p) for p in sys.argv[3:5]]
    solo_dur = [statistics.median(e - s for s, e in recs) for _, recs in solo]
    lo = max(h['t0'] for h, _ in pair) + 500_000_000
    hi = min(h['deadline'] for h, _ in pair) - 500_000_000
    window = hi - lo
    clipped = [clip(recs, lo, hi) for _, recs in pair]
    truth = [sum(1 for s, e in recs if lo <= e < hi) * solo_dur[i] for i, (_, recs) in enumerate(pair)]
    raw = [union(c) for c in clipped]
    equal, short = attribute(clipped)
    print(f"window {window / 1e9:.2f} s; solo kernel {solo_dur[0] / 1e3:.1f} / {solo_dur[1] / 1e3:.1f} us")
    print("tenant  truth%   raw%   equal%  shortest%")
    for i in range(2):
        print(f"  {'AB'[i]}    {100 * truth[i] / window:6.2f} {100 * raw[i] / window:6.2f} "
              f"{100 * equal[i] / window:7.2f} {100 * short[i] / window:8.2f}")
    for i in range(2):
        solo_busy = union(clip(solo[i][1], solo[i][1][0][0], solo[i][1][-1][1]))
        span = solo[i][1][-1][1] - solo[i][1][0][0]
        print(f"  solo {'AB'[i]} busy {100 * solo_busy / span:.1f} % of its run")


if __name__ == '__main__':
    main()
