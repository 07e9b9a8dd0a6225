#!/bin/bash
# Prepared for the next device time (issue 18): acceptance 2 and 3 at the library of this
# morning's end (records where a limit binds; the sampled mode's two estimates summed per 250-ms
# period): the training loop alone at 30 and 50, then two training loops at 50+50 and 30+70
# (sm_v2_bench.sh train pair, REPS reps, default 3; ~8 min), and the limited processes' stats.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29k.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="train pair" REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err >"$OUT/stats/limited_stats.txt"
tar czf "$OUT/raw29k.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
