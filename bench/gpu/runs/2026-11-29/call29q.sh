#!/bin/bash
# Prepared for the next device time (issue 18, acceptance 5 at the library of call29m): the
# training loop at 30 without and with /tmp/vgpulock, two processes of one container at 30, and
# with torch.profiler in the application (sm_v2_bench.sh part robust, REPS reps, default 3;
# ~8 min), with the limited processes' stats lines and their warnings.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29q.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="${ROBUST_PARTS:-robust}" REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh |
  grep -v " rep [0-9]*:"
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err >"$OUT/stats/limited_stats.txt"
cut -c1-200 "$OUT/stats/limited_stats.txt"
grep -ah 'vgpu' "$OUT"/sm/raw/*.err | grep -v 'sm-limit\]' | sort | uniq -c | head -20
tar czf "$OUT/raw29q.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
