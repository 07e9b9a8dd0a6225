#!/bin/bash
# Issue 18, acceptance 1 (median of 3) at f7a61d3: a tenant's free time counted to the nanosecond,
# so a saturating matmul loop alone stays in the alone rhythm (call29r.sh read 33.2 / 53.5 % at
# 30 / 50 with HEAD 82388f0, its waits flickering into the short rhythm). The matmul part three
# times (~8 min), then the closed request loop at 30 once (acceptance 4: it must keep the short
# rhythm, 91.5 % busy < 95 %).
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29u.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS=matmul MATMUL_REPS=${MATMUL_REPS:-3} bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
for r in "$OUT"/sm/matmul/r[0-9]*/; do
  r=${r%/}
  for f in "$r"/matmul_*.err "$r"/graph_30*.err; do
    echo "$(basename "$r")/$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 |
      grep -o 'busy_ms=[0-9.]*\|throttled_ms=[0-9.]*\|waits=[0-9]*\|max_wait_ms=[0-9.]*' | head -4 | tr '\n' ' ')"
  done
done
tar czf "$OUT/raw${TAG:-29u}_matmul.tgz" -C "$OUT/sm" matmul && rm -rf "$OUT/sm/matmul"
[ "${CLOSED:-1}" = 1 ] || exit 0  # call29v.sh: the matmul part only
OUT=$OUT/sm PARTS=infer-closed REPS=${REPS:-1} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err | cut -c1-220
date -u
tar czf "$OUT/raw29u_closed.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
