#!/bin/bash
# Issue 18, acceptance 6 on the training loop with the library of call30c (the CUPTI watch, one
# launch in 32 checked while nothing binds): native, native2, preload, l90 taking turns on one
# vCPU (ovh_turns.py), ~5 min.
#   here:   bash bench/gpu/prepare_devbuild.sh
#   device: bash bench/gpu/runs/2026-11-30/call30d.sh [BUDGET_S]   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/call30d
mkdir -p $T/train
python3 bench/gpu/ovh_turns.py run train $T/train --lib "$PWD/.devbuild/libvgpu.so" \
  --lib-env VGPU_SM_STATS=2 --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 --rounds 16 \
  --warmup-s 5 --budget-s "${1:-290}" --seed 305 --startup-s 20 | grep -v "^  turns"
date -u
for f in "$T"/train/turns_*_l90.err; do
  echo "== $f $(grep -a 'sm-limit\] pid=' "$f" | tail -1 | grep -o 'records=[0-9]*\|attaches=[0-9]*\|attached_ms=[0-9.]*\|buffers=[0-9]*\|windows=[0-9]*\|coasted=[0-9]*\|launches=[0-9]*' | tr '\n' ' ')"
  grep -a 'sm-trace\]' "$f" | sed 's/.*t_ms=/t_ms=/' | grep -v "window done" | head -12
done
tar czf "$OUT/call30d.tgz" --exclude="*.cache" -C /tmp call30d
