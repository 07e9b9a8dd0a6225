#!/bin/bash
# Prepared for the next device time (issue 18): does a training tenant at gpucores 30 hold its
# limit with the calibration that takes a higher ratio at once (NextScale), and what do the
# windows find on the real CUPTI? Acceptance 2 (training alone at 30 and 50), then the limited
# processes' stats lines in full (scale= and ratios= tell whether the windows measure right).
#   bash bench/gpu/runs/2026-11-29/call29e.sh   (repository root; `.devbuild` carried, HEAD's)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="train" REPS=3 bash bench/gpu/sm_v2_bench.sh
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/train_*.err | tee "$OUT/stats/limited_stats.txt"
# Only the tables and the stats come back (the device tool returns a limited number of files).
rm -rf "$OUT/sm/raw"
