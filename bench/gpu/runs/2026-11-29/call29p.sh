#!/bin/bash
# Prepared for the next device time (issue 18, acceptance 4's closed loop): at gpucores 30 the
# back-to-back inference loop ran with p99 69.3 ms where 67.3 is asked (call29o.sh). Its waits had
# two sources (docs/sm-limit.md, step 4 and Known limits): the alone rhythm's pauses (100 ms) while
# it counted as saturating, and in the short rhythm its records' delay x 100/30, which the library
# since then shortened for a tenant alone (records charged as they arrive, not 8 ms later).
# For each pause in PAUSES (default "100 60 40"; VGPU_SM_ALONE_PAUSE_MS, exported to every limited
# tenant): the closed loop at 30 (sm_v2_bench.sh part infer-closed, REPS reps, default 2), and for
# each pause in MATMUL_PAUSES (default "60 40") the matmul loop alone at MATMUL_LIMITS (default
# 10 30 70; sm_limit_bench.sh part alone), whose shares the pauses were chosen for (10 read 12.4 %
# with pauses of 100 ms, the most of the four limits; call29n.sh has 100). ~2 min a closed loop,
# ~3 min a matmul pause.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29p.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ALL=$OUT
for p in ${PAUSES:-100 60 40}; do
  export VGPU_SM_ALONE_PAUSE_MS=$p
  date -u
  echo "== VGPU_SM_ALONE_PAUSE_MS=$p"
  OUT=$ALL/p$p/sm PARTS=infer-closed REPS=${REPS:-2} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
  if [[ " ${MATMUL_PAUSES:-60 40} " == *" $p "* ]]; then
    mkdir -p "$ALL/p$p/matmul"
    OUT=$ALL/p$p/matmul SM_BENCH_PARTS=alone SM_BENCH_ALONE_LIMITS="${MATMUL_LIMITS:-10 30 70}" \
      SM_BENCH_WINDOW=8 SM_BENCH_WARMUP=6 VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so \
      bash bench/gpu/sm_limit_bench.sh | tail -12
  fi
  tar czf "$ALL/raw29p_$p.tgz" -C "$ALL/p$p" . && rm -rf "$ALL/p$p/sm/raw"
done
date -u
