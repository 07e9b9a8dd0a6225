#!/bin/bash
# Issue 18, acceptance 2: where does a detached training tenant's scale come from? The training
# loop alone at gpucores 30 and 50 (sm_v2_bench.sh train, 3 reps) with a trace build of HEAD's
# library (build_trace.sh: one stderr line per calibration period, window, detach, change of
# measure, and per second of measuring; behaviour unchanged). The raw files come back in a tar.
#   bash bench/gpu/runs/2026-11-29/build_trace.sh   (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29g.sh       (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
LIBVGPU=$PWD/.devbuild/trace/libvgpu.so OUT=$OUT/sm PARTS="train" REPS=3 bash bench/gpu/sm_v2_bench.sh
date -u
tar czf "$OUT/raw29g.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
