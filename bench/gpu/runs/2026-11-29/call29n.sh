#!/bin/bash
# Issue 18, acceptance 1 and 3 at the library of call29m (CUPTI buffers sized by the launch rate,
# 4-ms passes while nothing waits): the matmul part of sm_v2_bench.sh (alone 10/30/50/70, graph at
# 30, pair 30+70, trio 20/30/50; MATMUL_REPS, default 1), then two training loops unlimited, at
# 50+50 and at 30+70 (part pair, REPS, default 3), with the limited processes' stats lines.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29n.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="matmul" MATMUL_REPS=${MATMUL_REPS:-1} bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
grep -a 'sm-limit\]' "$OUT"/sm/matmul/r1/*.err | grep -o '^[^ ]*\|measure=[a-z]*\|busy_ms=[0-9.]*\|waits=[0-9]*\|passes=[0-9]*' | paste -sd' ' | sed 's/ [^ ]*matmul/\n&/g'
tar czf "$OUT/raw29n_matmul.tgz" -C "$OUT/sm" matmul && rm -rf "$OUT/sm/matmul"
OUT=$OUT/sm PARTS="pair" REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err >"$OUT/stats/limited_stats.txt"
cut -c1-260 "$OUT/stats/limited_stats.txt"
tar czf "$OUT/raw29n.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
