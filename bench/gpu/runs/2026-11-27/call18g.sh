#!/bin/bash
# Issue 18, call G: the library at ad4027d (defaults: pauses of 100 ms alone, records from 90 %):
# matmul alone 10/30/50/70 and CUDA graph at 30, 3 repetitions with baselines.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for rep in 1 2 3; do
  O=/tmp/mg$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  OUT=$O SM_BENCH_PARTS="alone graph" SM_BENCH_ALONE_LIMITS="10 30 50 70" SM_BENCH_WINDOW=8 \
    SM_BENCH_WARMUP=5 VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
    grep -E "^(baseline|matmul_[0-9]+ |graph_30 )"
done
tar czf "$R/raw.tgz" -C /tmp mg1 mg2 mg3 2>/dev/null
date -u
