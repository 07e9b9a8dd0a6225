#!/bin/bash
# Issue 18, acceptance 6 on the launch loop, library with the CUPTI watch and coasting one launch
# in 32: native, native2, preload, l90 (traced: VGPU_SM_STATS=2) taking turns, ~9 min.
#   here:   bash bench/gpu/prepare_devbuild.sh
#   device: bash bench/gpu/runs/2026-11-30/call30c.sh [BUDGET_S]   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/call30c
mkdir -p $T/small
python3 bench/gpu/ovh_turns.py run small $T/small --lib "$PWD/.devbuild/libvgpu.so" \
  --lib-env VGPU_SM_STATS=2 --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 --rounds 16 \
  --warmup-s 5 --budget-s "${1:-500}" --seed 304 --startup-s 8 | grep -v "^  turns"
date -u
for f in "$T"/small/turns_*_l90.err; do
  echo "== $f $(grep -a 'sm-limit\] pid=' "$f" | tail -1 | grep -o 'records=[0-9]*\|attaches=[0-9]*\|attached_ms=[0-9.]*\|buffers=[0-9]*\|lent=[0-9]*\|unusable=[0-9]*\|windows=[0-9]*\|coasted=[0-9]*' | tr '\n' ' ')"
  grep -a 'sm-trace\]' "$f" | sed 's/.*t_ms=/t_ms=/' | head -40
done
python3 bench/gpu/ovh_turns.py report $T/small > $T/small/report.txt
tar czf "$OUT/call30c.tgz" --exclude="*.cache" -C /tmp call30c
