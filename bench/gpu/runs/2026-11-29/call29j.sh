#!/bin/bash
# Issue 18, acceptance 1 after records came back where a limit binds: the saturating matmul loop
# alone at 10/30/50/70, graph at 30, pair 30+70, trio 20/30/50 (sm_v2_bench.sh matmul part, one
# repetition), with the limited processes' stats lines.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29j.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS="matmul" MATMUL_REPS=1 bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
grep -a 'sm-limit\]' "$OUT"/sm/matmul/r1/*.err | grep -o '^[^ ]*\|measure=[a-z]*\|busy_ms=[0-9.]*\|waits=[0-9]*\|per_launch_us=[0-9.-]*' | paste -sd' ' | sed 's/ matmul/\nmatmul/g'
tar czf "$OUT/raw29j.tgz" -C "$OUT/sm" matmul && rm -rf "$OUT/sm/matmul"
