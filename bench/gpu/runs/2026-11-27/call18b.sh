#!/bin/bash
# Issue 18, call B: two host-bound training loops: unlimited, 50+50, 30+70, 3 repetitions.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
OUT=/tmp/v2 REPS=3 WARM=18 WIN=5 PARTS="pair" NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu.so \
  bash bench/gpu/sm_v2_bench.sh 2>&1 | tail -30
echo "== limiter stats (train pair)"
for f in /tmp/v2/raw/pair_*.err; do s=$(grep -ao 'limit=[0-9]* .*sync_ms=[0-9.]*' "$f" | sed 's/ events=.*//' | tail -1); [ -n "$s" ] && echo "$(basename "$f") $s" | cut -c1-260; done
tar czf "$R/raw.tgz" -C /tmp v2 2>/dev/null
date -u
