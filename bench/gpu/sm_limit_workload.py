"""One tenant of the SM-limit GPU benchmark (driven by sm_limit_bench.sh).

Runs one workload until END_AT (wall clock, shared by concurrently started tenants) and prints one
JSON line: completed iterations per second of the window [START_AT, END_AT), per-second counts.

Workloads:
  matmul  bf16 8192x8192 @ 8192x8192, synchronising every 4 products (a saturating training-like
          loop)
  small   launch-heavy: 1 MiB elementwise kernels, synchronising every 200 launches
  graph   torch.cuda.CUDAGraph of 4 bf16 8192^2 products, replayed, synchronising every replay
  launch  launch-rate probe for overhead: tiny elementwise kernels, median of 5 timed bursts
  small_duty30, small_duty70
          the `small` loop without any limiter, pausing itself in the rhythm the limiter gives a
          tenant alone at 30 % (429 ms of work, 1 s of sleep) or 70 % (1 s of work, 429 ms of
          sleep); also reports its rate while running, to show what the pauses alone cost a
          host-bound loop (CPU wake-up) apart from the limiter
"""
import json
import os
import sys
import time

import torch


def block_profile(blocks, iters):
    """Per-iteration time of the loop while it runs: blocks longer than 5x the median held a pause
    (a budget wait) and are left out; the rest are grouped by the time since the last pause."""
    ordered = sorted(blocks)
    median = ordered[len(ordered) // 2]
    edges = [0.005, 0.02, 0.1, 0.5, float("inf")]
    sums = [[0.0, 0] for _ in edges]
    since = float("inf")
    running_s, running_n, pauses = 0.0, 0, 0
    for b in blocks:
        if b > 5 * median:
            pauses += 1
            since = 0.0
            continue
        running_s += b
        running_n += 1
        for i, edge in enumerate(edges):
            if since < edge:
                sums[i][0] += b
                sums[i][1] += 1
                break
        since += b
    us = lambda s, n: round(s / n / iters * 1e6, 3) if n else None
    return {
        "us_per_iter_p10": round(ordered[len(ordered) // 10] / iters * 1e6, 3),
        "us_per_iter_p50": round(median / iters * 1e6, 3),
        "us_per_iter_p90": round(ordered[len(ordered) * 9 // 10] / iters * 1e6, 3),
        "us_per_iter_running": us(running_s, running_n),
        "pauses": pauses,
        "us_per_iter_after_pause": {
            ("<%gms" % (e * 1000) if e != float("inf") else "later"): us(*sums[i])
            for i, e in enumerate(edges)},
    }


def make_step(kind, dev):
    """The loop body of a workload (shared with sm_workloads.py): (step, iterations per step,
    steps between synchronisations)."""
    if kind in ("matmul", "graph"):
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        c = torch.empty_like(a)
    else:
        x = torch.zeros(256 * 1024, device=dev, dtype=torch.float32)

    if kind == "matmul":
        per_step, sync_every = 1, 4

        def step():
            torch.matmul(a, b, out=c)
    elif kind == "graph":
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                torch.matmul(a, b, out=c)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(4):
                torch.matmul(a, b, out=c)
        per_step, sync_every = 4, 1

        def step():
            g.replay()
    elif kind in ("small", "small_duty30", "small_duty70"):
        per_step, sync_every = 1, 200

        def step():
            x.add_(1.0)
    else:
        raise SystemExit("unknown workload " + kind)
    return step, per_step, sync_every


def main():
    kind = sys.argv[1]
    start_at = float(os.environ["START_AT"])
    end_at = float(os.environ["END_AT"])
    dev = torch.device("cuda")
    if kind == "launch":
        y = torch.zeros(32, device=dev)
        for _ in range(2000):
            y.add_(1.0)
        torch.cuda.synchronize()
        rates = []
        for _ in range(5):
            n = 20000
            t0 = time.perf_counter()
            for _ in range(n):
                y.add_(1.0)
            torch.cuda.synchronize()
            rates.append(n / (time.perf_counter() - t0))
        rates.sort()
        print(json.dumps({"kind": kind, "launches_per_s": rates[2], "all": rates}), flush=True)
        return
    step, per_step, sync_every = make_step(kind, dev)

    # Warm up (cuBLAS heuristics, allocator, limiter state) until the common start.
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    while time.time() < start_at:
        for _ in range(sync_every):
            step()
        torch.cuda.synchronize()

    duty = {"small_duty30": (0.429, 1.0), "small_duty70": (1.0, 0.429)}.get(kind)
    run_started = time.time()
    running_s = 0.0
    seconds = int(end_at - start_at)
    per_second = [0] * max(seconds, 1)
    done = 0
    # Durations of the synchronised blocks inside the window (launch-bound loops: where the time
    # goes while running, and how fast the loop runs right after a pause).
    blocks = []
    block_t0 = time.perf_counter()
    while True:
        for _ in range(sync_every):
            step()
        torch.cuda.synchronize()
        now = time.time()
        block_t1 = time.perf_counter()
        if now >= start_at:
            blocks.append(block_t1 - block_t0)
        block_t0 = block_t1
        if now >= end_at:
            running_s += now - max(run_started, start_at)
            break
        if duty and now - run_started >= duty[0]:
            running_s += now - max(run_started, start_at) if now > start_at else 0.0
            time.sleep(duty[1])
            run_started = time.time()
        slot = int(now - start_at)
        if 0 <= slot < len(per_second):
            per_second[slot] += sync_every * per_step
        done += sync_every * per_step
    rate = sum(per_second) / max(seconds, 1)
    result = {"kind": kind, "iters_per_s": rate, "per_second": per_second}
    if kind.startswith("small") and blocks:
        result["blocks"] = block_profile(blocks, sync_every * per_step)
    if duty:
        result["running_s"] = running_s
        result["iters_per_running_s"] = sum(per_second) / running_s if running_s > 0 else 0.0
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
