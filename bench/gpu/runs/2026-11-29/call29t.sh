#!/bin/bash
# Issue 18, acceptance 1's third repetition of the matmul part (call29r.sh has two) and
# acceptance 5 (call29q.sh: no lock directory, two processes of one container, the application's
# own profiler; REPS 2), at the library it is run with. ~8.5 min; the matmul part first.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29t.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/m3 PARTS=matmul MATMUL_REPS=1 bash bench/gpu/sm_v2_bench.sh | tail -25
tar czf "$OUT/raw29t_matmul.tgz" -C "$OUT/m3" matmul && rm -rf "$OUT/m3/matmul"
REPS=${REPS:-2} bash bench/gpu/runs/2026-11-29/call29q.sh
