#!/bin/bash
# Issue 18, call A: matmul alone at 10 and 50 and CUDA graph replay at 30, 3 repetitions, each
# next to its native baselines (before/after) in the same call.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for rep in 1 2 3; do
  O=/tmp/mm$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  OUT=$O SM_BENCH_PARTS="alone graph" SM_BENCH_ALONE_LIMITS="10 50" SM_BENCH_WINDOW=10 \
    SM_BENCH_WARMUP=6 VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
    grep -E "^(baseline|matmul_|graph_|scenario|SM limit)"
done
tar czf "$R/raw.tgz" -C /tmp mm1 mm2 mm3 2>/dev/null
date -u
