#!/bin/bash
# Issue 18, acceptance 1 (median of 3) at the session's final library (ac813ce and later: only
# the saturation test counts free time to the nanosecond; turns keep the pass-granular count of
# 82388f0): the matmul part three times (~8 min) and each limited tenant's stats line.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29v.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS=matmul MATMUL_REPS=${MATMUL_REPS:-3} bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
for r in "$OUT"/sm/matmul/r[0-9]*/; do
  r=${r%/}
  for f in "$r"/matmul_*.err "$r"/graph_30*.err; do
    echo "$(basename "$r")/$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 |
      grep -o 'busy_ms=[0-9.]*\|throttled_ms=[0-9.]*\|waits=[0-9]*\|max_wait_ms=[0-9.]*' |
      head -4 | tr '\n' ' ')"
  done
done
tar czf "$OUT/raw29v_matmul.tgz" -C "$OUT/sm" matmul && rm -rf "$OUT/sm/matmul"
