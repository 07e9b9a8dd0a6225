#!/bin/bash
# Issue 18, call D: the candidate defaults (records from 90 % of the limit, alone stretches of
# 100 ms): matmul alone 10/30/50/70 and CUDA graph at 30, 3 repetitions with baselines.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
export VGPU_SM_ALONE_STRETCH_MS=100
for rep in 1 2 3; do
  O=/tmp/md$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  OUT=$O SM_BENCH_PARTS="alone graph" SM_BENCH_ALONE_LIMITS="10 30 50 70" SM_BENCH_WINDOW=8 \
    SM_BENCH_WARMUP=5 VGPU_LIBRARY=$PWD/.devbuild/libvgpu-near90.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
    grep -E "^(baseline|matmul_[0-9]+ |graph_30 )"
done
tar czf "$R/raw.tgz" -C /tmp md1 md2 md3 2>/dev/null
date -u
