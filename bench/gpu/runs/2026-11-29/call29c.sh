#!/bin/bash
# Issue 18: acceptance 2 (training alone at gpucores 30 and 50) and 4's first part (open-loop
# inference alone at 50, far below its limit: CUPTI detached, launches coasting) with the library
# whose launches coast (HEAD), last measured with libraries before detaching and coasting.
#   bash bench/gpu/runs/2026-11-29/call29c.sh   (repository root; `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="train infer-alone" REPS=3 bash bench/gpu/sm_v2_bench.sh
date -u
for f in "$OUT"/sm/raw/*.err; do
  s=$(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'limit=[0-9]*\|launches=[0-9]*\|waits=[0-9]*\|max_wait_ms=[0-9.]*\|coasted=[0-9]*\|attached_ms=[0-9.]*' | tr '\n' ' ')
  [ -n "$s" ] && echo "$(basename "$f") $s"
done
