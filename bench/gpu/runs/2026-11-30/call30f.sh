#!/bin/bash
# Issue 18, acceptance 6: does a process that attached CUPTI and detached it (cuptiFinalize) pay
# for it afterwards? call30e's training loop (l90 +2.2 % against native, preload +0.8, A/A +0.6)
# with nativecc beside it: no libvgpu, CUPTI's kernel records on for three steps at its start,
# then cuptiFinalize (cupti_cycle.py), as a limited process attaches at its start and for its
# windows. Library as call30e.
#   here:   bash bench/gpu/prepare_devbuild.sh
#   device: bash bench/gpu/runs/2026-11-30/call30f.sh KIND BUDGET_S SEED   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
KIND=${1:-train}
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/call30f
mkdir -p "$T/$KIND"
python3 bench/gpu/ovh_turns.py run "$KIND" "$T/$KIND" --lib "$PWD/.devbuild/libvgpu.so" \
  --lib-env VGPU_SM_STATS=2 --cupti-cycle-config --pin 8-11 --one-cpu 8 --limit 90 \
  --slice-s 0.5 --rounds 16 --warmup-s 5 --budget-s "${2:-540}" --seed "${3:-307}" \
  --startup-s 20 | grep -v "^  turns"
date -u
for f in "$T/$KIND"/turns_*_l90.err; do
  echo "== $f $(grep -a 'sm-limit\] pid=' "$f" | tail -1 | grep -o 'waits=[0-9]*\|records=[0-9]*\|attaches=[0-9]*\|attached_ms=[0-9.]*\|windows=[0-9]*\|coasted=[0-9]*\|launches=[0-9]*' | tr '\n' ' ')"
done
tar czf "$OUT/call30f_$KIND.tgz" --exclude="*.cache" -C /tmp call30f
