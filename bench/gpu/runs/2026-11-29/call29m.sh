#!/bin/bash
# Issue 18, after CUPTI's buffers were sized by the launch rate and the measuring thread passes
# every 4 ms while nothing waits for budget: call29l.sh's threads of a training tenant at 50 and 90
# beside native (2 rounds), then acceptance 2 (sm_v2_bench.sh train: the loop alone at 30 and 50,
# REPS reps, default 3) with the limited processes' stats lines.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29m.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
ALL=$OUT
mkdir -p "$ALL/diag"
OUT=$ALL/diag VARIANTS="native l50 l90" ROUNDS=2 bash bench/gpu/runs/2026-11-29/call29l.sh 2>&1 |
  grep -v '^{"label"\|^$\|^[a-z0-9]* r[0-9] {'
date -u
OUT=$ALL/sm PARTS="train" REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
mkdir -p "$ALL/stats"
bash bench/gpu/sm_stats_lines.sh "$ALL"/sm/raw/train_*.err | tee "$ALL/stats/limited_stats.txt" | cut -c1-330
tar czf "$ALL/raw29m.tgz" -C "$ALL/sm" raw && rm -rf "$ALL/sm/raw"
