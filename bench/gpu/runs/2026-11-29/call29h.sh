#!/bin/bash
# Issue 18, acceptance 2 with the sampled mode's launch estimate, the calibration that needs enough
# kernels, windows that skip their first 50 ms and a window at once for a change of work: the
# training loop alone at gpucores 30 and 50 (sm_v2_bench.sh train, REPS reps, default 5), then
# the limited processes' stats lines in full (scale=, per_launch_us=, ratios=, windows=, moved=).
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29h.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="train" REPS=${REPS:-5} bash bench/gpu/sm_v2_bench.sh
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/train_*.err | tee "$OUT/stats/limited_stats.txt"
tar czf "$OUT/raw29h.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
