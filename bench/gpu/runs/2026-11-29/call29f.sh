#!/bin/bash
# Prepared for the next device time (issue 18, acceptance 6): is the limited training loop's
# extra ~1-2 points the measuring thread's rhythm while nothing binds? Whole processes taking
# turns on one vCPU (ovh_turns.py) on the training loop: native, native2, preload, l90 (HEAD) and
# l90b (HEAD with the quieter rhythm of build_quiet.sh: passes every 32 ms, coasting end marks
# every 16 ms), the two limited ones side by side in every round.
#   bash bench/gpu/runs/2026-11-29/build_quiet.sh; bash bench/gpu/prepare_devbuild.sh  (here)
#   bash bench/gpu/runs/2026-11-29/call29f.sh [BUDGET_S]   (device; `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
T=/tmp/turns29f
mkdir -p $T/train
python3 bench/gpu/ovh_turns.py run train $T/train --lib "$PWD/.devbuild/libvgpu.so" \
  --lib2 "$PWD/.devbuild/quiet/libvgpu.so" --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 \
  --rounds 16 --warmup-s 5 --budget-s "${1:-540}" --seed 296 --startup-s 20 | grep -v "^  turns"
date -u
for f in "$T"/train/turns_*_l90*.err; do
  echo "$f $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'launches=[0-9]*\|busy_ms=[0-9.]*\|passes=[0-9]*\|events=[0-9]*\|coasted=[0-9]*\|windows=[0-9]*\|scale=[0-9.-]*\|ratios=[0-9.,-]*' | tr '\n' ' ')"
done
tar czf "$OUT/turns29f.tgz" --exclude="*.cache" -C /tmp turns29f
