#!/bin/bash
# Issue 18, call C: the training pair with kernel records from 90 % of the limit (not 75 %), and
# matmul alone at 50 with alone stretches of 250 ms (default) and 100 ms, 2 repetitions.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
OUT=/tmp/v2 REPS=3 WARM=18 WIN=5 PARTS="pair" NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu-near90.so \
  bash bench/gpu/sm_v2_bench.sh 2>&1 | sed -n '/== pair/,$p'
for f in /tmp/v2/raw/pair_*.err; do s=$(grep -ao 'limit=[0-9]* .*sync_ms=[0-9.]*' "$f" | sed 's/ events=.*//' | tail -1); [ -n "$s" ] && echo "$(basename "$f") $s" | cut -c1-200; done
for rep in 1 2; do
  for st in 250 100; do
    O=/tmp/a50_${st}_$rep; rm -rf "$O"; mkdir -p "$O"
    echo "== alone 50, stretch $st ms, rep $rep"
    VGPU_SM_ALONE_STRETCH_MS=$st OUT=$O SM_BENCH_PARTS="alone" SM_BENCH_ALONE_LIMITS="50" SM_BENCH_WINDOW=10 \
      SM_BENCH_WARMUP=6 VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
      grep -E "^(baseline|matmul_)"
    grep -ao 'limit=[0-9]* .*' $O/matmul_50*.err | tail -1 | cut -c1-200
  done
done
tar czf "$R/raw.tgz" -C /tmp v2 a50_250_1 a50_100_1 a50_250_2 a50_100_2 2>/dev/null
date -u
