#!/bin/bash
# Issue 18, call H: inference with the library at ad4027d (records from 90 % of the limit):
# open loop alone (native, 50) and beside a saturating training tenant (unlimited, 50+50), 3 reps.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
OUT=/tmp/v2i REPS=3 PARTS="infer-alone infer-pair" NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu.so \
  bash bench/gpu/sm_v2_bench.sh 2>&1 | sed -n '/== infer/,$p'
tar czf "$R/raw.tgz" -C /tmp v2i 2>/dev/null
date -u
