#!/bin/bash
# Issue 18, acceptance 6, the part not yet measured with launches coasting: whole processes taking
# turns on one vCPU (ovh_turns.py: native, native2, preload, l90 = HEAD's library) on the training
# loop, then on the launch loop, each batch of fresh processes until its budget.
#   bash bench/gpu/runs/2026-11-29/call29a.sh [TRAIN_BUDGET_S] [SMALL_BUDGET_S]
#   (repository root; `.devbuild` from bench/gpu/prepare_devbuild.sh carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
T=/tmp/turns29a
mkdir -p $T/train $T/small
python3 bench/gpu/ovh_turns.py run train $T/train --lib "$LIB" --pin 8-11 --one-cpu 8 --limit 90 \
  --slice-s 0.5 --rounds 16 --warmup-s 5 --budget-s "${1:-320}" --seed 291 --startup-s 20 |
  grep -v "^  turns"
date -u
python3 bench/gpu/ovh_turns.py run small $T/small --lib "$LIB" --pin 8-11 --one-cpu 8 --limit 90 \
  --slice-s 0.5 --rounds 16 --warmup-s 5 --budget-s "${2:-200}" --seed 292 --startup-s 8 |
  grep -v "^  turns"
date -u
for f in "$T"/*/turns_*_l90.err; do
  echo "$f $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'launches=[0-9]*\|coasted=[0-9]*\|windows=[0-9]*\|attached_ms=[0-9.]*\|measuring_cpu_ms=[0-9.]*' | tr '\n' ' ')"
done
python3 bench/gpu/ovh_turns.py report $T/train > $T/train/report.txt
python3 bench/gpu/ovh_turns.py report $T/small > $T/small/report.txt
cat $T/train/report.txt $T/small/report.txt
tar czf "$OUT/turns29a.tgz" --exclude="*.cache" -C /tmp turns29a
date -u
