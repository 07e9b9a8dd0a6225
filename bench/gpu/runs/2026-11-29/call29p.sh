#!/bin/bash
# Prepared for the next device time (issue 18, acceptance 4's closed loop): at gpucores 30 the
# back-to-back inference loop, a saturating tenant alone, ran the alone rhythm (pauses of 100 ms)
# and its p99 read 69.3 ms where 67.3 is asked (call29o.sh). For each pause in PAUSES (default
# "60 40"; VGPU_SM_ALONE_PAUSE_MS, exported to every limited tenant): the closed loop at 30
# (sm_v2_bench.sh part infer-closed, REPS reps, default 2) and the matmul loop alone at 10, 30 and
# 70 (sm_limit_bench.sh part alone), whose shares the pauses were chosen for (docs/sm-limit.md
# step 4; 10 read 12.4 % with pauses of 100 ms, the most of the four limits). ~4 min a pause.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29p.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ALL=$OUT
for p in ${PAUSES:-60 40}; do
  export VGPU_SM_ALONE_PAUSE_MS=$p
  date -u
  echo "== VGPU_SM_ALONE_PAUSE_MS=$p"
  OUT=$ALL/p$p/sm PARTS=infer-closed REPS=${REPS:-2} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
  mkdir -p "$ALL/p$p/matmul"
  OUT=$ALL/p$p/matmul SM_BENCH_PARTS=alone SM_BENCH_ALONE_LIMITS="${MATMUL_LIMITS:-10 30 70}" SM_BENCH_WINDOW=8 \
    SM_BENCH_WARMUP=6 VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh | tail -12
  tar czf "$ALL/raw29p_$p.tgz" -C "$ALL/p$p" . && rm -rf "$ALL/p$p/sm/raw"
done
date -u
