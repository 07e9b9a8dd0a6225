#!/bin/bash
# Issue 18, acceptance 4 at the library of call29m: inference alone at 50 (open loop), closed loop
# at 30, and beside a saturating training tenant at 50+50 (sm_v2_bench.sh infer parts, REPS,
# default 3), with the limited processes' stats lines.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29o.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
date -u
OUT=$OUT/sm PARTS="${INFER_PARTS:-infer-alone infer-closed infer-pair}" REPS=${REPS:-3} \
  bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err >"$OUT/stats/limited_stats.txt"
cut -c1-200 "$OUT/stats/limited_stats.txt"
tar czf "$OUT/raw29o.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
