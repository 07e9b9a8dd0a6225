#!/bin/bash
# What libvgpu costs as whole processes taking turns (issue 18, acceptance 6; docs/gpu-results.md,
# "SM limit: overhead of a limit that does not bind"): native, native2 (the A/A control), preload
# (LD_PRELOAD libvgpu, no limit) and l90 (gpucores 90: a limit that does not bind) start the way a
# pod starts them and take turns on the GPU in 0.5-s slices of the same work, every thread of each
# on one vCPU (bench/gpu/ovh_turns.py; the measuring thread on the others of 8-11), 16 rounds a
# batch, batches of fresh processes until BUDGET_S. Prints the report, then each limited process's
# stats line (VGPU_SM_STATS=2 also traces its changes of measuring mode into its .err).
#   here:   bash bench/gpu/prepare_devbuild.sh
#   device: bash bench/gpu/overhead_turns.sh KIND [BUDGET_S] [SEED]   (`.devbuild` carried)
# KIND: train (the training loop, default) or small (the launch loop). Needs 12 CPUs (cores 8-11
# are the tenants'). BUDGET_S (default 520) fits one 10-minute call. Environment: LIB (default
# .devbuild/libvgpu.so), T (output folder, default /tmp/overhead_turns), OUT (if set, a tarball
# of T is written there). Several calls pool: python3 bench/gpu/ovh_turns.py report DIR [DIR...]
# Made from the device-call scripts of 2026-11-30 (git show d8b3fc2:bench/gpu/runs/2026-11-30/).
cd "$(dirname "$0")/../.." || exit 1
KIND=${1:-train}
BUDGET=${2:-520}
SEED=${3:-1}
LIB=${LIB:-$PWD/.devbuild/libvgpu.so}
T=${T:-/tmp/overhead_turns}
case "$KIND" in
  train) STARTUP=20 ;;
  small) STARTUP=8 ;;
  *) echo "usage: $0 train|small [BUDGET_S] [SEED]" >&2; exit 2 ;;
esac
[ -f "$LIB" ] || { echo "no $LIB: run bash bench/gpu/prepare_devbuild.sh first, or set LIB" >&2; exit 1; }
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
mkdir -p "$T/$KIND"
python3 bench/gpu/ovh_turns.py run "$KIND" "$T/$KIND" --lib "$LIB" --lib-env VGPU_SM_STATS=2 \
  --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 --rounds 16 --warmup-s 5 --budget-s "$BUDGET" \
  --seed "$SEED" --startup-s "$STARTUP" | grep -v "^  turns"
date -u
for f in "$T/$KIND"/turns_*_l90.err; do
  [ -f "$f" ] || continue
  echo "== $f $(grep -a 'sm-limit\] pid=' "$f" | tail -1 | grep -o 'waits=[0-9]*\|records=[0-9]*\|attaches=[0-9]*\|attached_ms=[0-9.]*\|buffers=[0-9]*\|windows=[0-9]*\|coasted=[0-9]*\|launches=[0-9]*' | tr '\n' ' ')"
done
python3 bench/gpu/ovh_turns.py report "$T/$KIND" >"$T/$KIND/report.txt"
if [ -n "${OUT:-}" ]; then
  tar czf "$OUT/overhead_turns_$KIND.tgz" --exclude="*.cache" -C "$(dirname "$T")" "$(basename "$T")"
fi
