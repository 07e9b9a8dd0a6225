"""A tenant that reports its throughput as it goes (bench/gpu/monitor_default.sh): runs a loop of
sm_limit_workload.py (matmul by default) for --seconds and prints one JSON line per --every s:
{"t": epoch s at the end of the interval, "rate": iterations/s over it}. Throughput of a saturating
loop is proportional to its share of the GPU, so a limit shows as a step in this series."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sm_limit_workload  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", default="matmul")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--every", type=float, default=0.5)
    a = ap.parse_args()
    step, per_step, sync_every = sm_limit_workload.make_step(a.kind, torch.device("cuda"))
    end = time.time() + a.seconds
    mark, done = time.time(), 0
    while True:
        for _ in range(sync_every):
            step()
        torch.cuda.synchronize()
        done += per_step * sync_every
        now = time.time()
        if now - mark >= a.every:
            print(json.dumps({"t": round(now, 3), "rate": round(done / (now - mark), 2)}), flush=True)
            mark, done = now, 0
        if now >= end:
            break


if __name__ == "__main__":
    main()
