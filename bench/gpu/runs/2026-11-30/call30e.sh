#!/bin/bash
# Issue 18, acceptance 6, with each slice's median unit time beside its wall time (a unit of the
# training loop is one step, of the launch loop 200 launches; each ends in a synchronisation):
# native, native2, preload, l90 taking turns on one vCPU (ovh_turns.py), library as of call30c/d
# (`d9d12d1`; later commits change only how its statistics are printed).
#   here:   bash bench/gpu/prepare_devbuild.sh
#   device: bash bench/gpu/runs/2026-11-30/call30e.sh KIND BUDGET_S SEED   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
KIND=${1:-train}
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/call30e
mkdir -p "$T/$KIND"
python3 bench/gpu/ovh_turns.py run "$KIND" "$T/$KIND" --lib "$PWD/.devbuild/libvgpu.so" \
  --lib-env VGPU_SM_STATS=2 --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 --rounds 16 \
  --warmup-s 5 --budget-s "${2:-540}" --seed "${3:-306}" --startup-s 20 | grep -v "^  turns"
date -u
for f in "$T/$KIND"/turns_*_l90.err; do
  echo "== $f $(grep -a 'sm-limit\] pid=' "$f" | tail -1 | grep -o 'waits=[0-9]*\|records=[0-9]*\|attaches=[0-9]*\|attached_ms=[0-9.]*\|buffers=[0-9]*\|windows=[0-9]*\|coasted=[0-9]*\|launches=[0-9]*' | tr '\n' ' ')"
done
tar czf "$OUT/call30e_$KIND.tgz" --exclude="*.cache" -C /tmp call30e
