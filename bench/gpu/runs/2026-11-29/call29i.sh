#!/bin/bash
# Issue 18, acceptance 2 and 1 with a tenant alone charged by the sampled mode's estimates where
# its limit binds (records only beside other tenants): the training loop alone at gpucores 30 and
# 50 (sm_v2_bench.sh train, REPS reps, default 3), then the saturating matmul loop alone at
# 10/30/50/70, graph at 30, pair 30+70, trio 20/30/50 (matmul part, one repetition), and the
# limited training processes' stats lines.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29i.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="train" REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
OUT=$OUT/sm PARTS="matmul" MATMUL_REPS=1 bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/train_*.err | tee "$OUT/stats/limited_stats.txt" | cut -c1-60
tar czf "$OUT/raw29i.tgz" -C "$OUT/sm" raw matmul && rm -rf "$OUT/sm/raw" "$OUT/sm/matmul"
