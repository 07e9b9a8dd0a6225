#!/bin/bash
# Issue 18, call F: (1) the training loop alone (native, 30, 50), 3 reps, records from 90 % of the
# limit; (2) matmul alone at 30/50/70 with stretches sized for a ~100-ms pause (S = 100*L/(100-L)).
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
OUT=/tmp/v2e REPS=3 WARM=18 WIN=5 PARTS="train" NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu-near90.so \
  VGPU_SM_ALONE_STRETCH_MS=100 bash bench/gpu/sm_v2_bench.sh 2>&1 | sed -n '/== train/,$p'
for f in /tmp/v2e/raw/train_*.err; do s=$(grep -ao 'limit=[0-9]* .*sync_ms=[0-9.]*' "$f" | sed 's/ events=.*//' | tail -1); [ -n "$s" ] && echo "$(basename "$f") $s" | cut -c1-200; done
for rep in 1 2; do
  O=/tmp/mf$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  for l in 30 50 70; do
    s=$((100 * l / (100 - l)))
    OUT=$O SM_BENCH_PARTS="alone" SM_BENCH_ALONE_LIMITS="$l" SM_BENCH_WINDOW=8 SM_BENCH_WARMUP=5 \
      VGPU_SM_ALONE_STRETCH_MS=$s VGPU_LIBRARY=$PWD/.devbuild/libvgpu-near90.so \
      bash bench/gpu/sm_limit_bench.sh 2>&1 | grep -E "^(matmul_[0-9]+ )" | sed "s/$/  (stretch $s ms)/"
    mkdir -p $O/l$l && mv $O/*.json $O/*.err $O/l$l/ 2>/dev/null
  done
done
tar czf "$R/raw.tgz" -C /tmp v2e mf1 mf2 2>/dev/null
date -u
