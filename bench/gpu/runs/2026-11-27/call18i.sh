#!/bin/bash
# Issue 18, call I: matmul pair 30+70 and trio 20/30/50 with the library at 27738ad (defaults of ad4027d),
# 3 repetitions with baselines.
# Each repetition: 4 groups (base, pair, trio, base2) of SM_BENCH_WARMUP + SM_BENCH_WINDOW = 13 s,
# about 60 s with process start-up; the call about 3.5 min.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
for rep in 1 2 3; do
  O=/tmp/ms$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  OUT=$O SM_BENCH_PARTS="shared" SM_BENCH_WINDOW=8 SM_BENCH_WARMUP=5 \
    VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
    grep -E "^(baseline|pair|trio|scenario|SM limit|build)" | grep -v " done: "
done
tar czf "$R/raw.tgz" -C /tmp ms1 ms2 ms3 2>/dev/null
date -u
