#!/bin/bash
# Issue 18, acceptance 6, next step (prepared 2026-11-28 night, not yet run): where the ~230 ns a
# launch that a limited launch loop pays beyond its hooks comes from. Whole processes in one-vCPU
# turns (ovh_turns.py --one-cpu 8) with a sixth process, nativecc: no libvgpu, but CUPTI's activity
# API attached and finalized three times at its start (bench/gpu/cupti_cycle.py), as a limited
# process's start and windows do. nativecc as slow as l90: launches after cuptiFinalize do not get
# their never-attached cost back; nativecc as fast as native: the cost is the limiter's own. And
# a seventh, l90b: build_variants.sh's variant 4 (the limiter of d89f467 that never waits for
# budget) with VGPU_CUPTI_LIBRARY=off: the limited hooks, the measuring thread and its events
# without CUPTI ever attached (events alone would bind a launch loop at 90).
#   bash bench/gpu/runs/2026-11-28/call28n.sh [SMALL_BUDGET_S] [TRAIN_BUDGET_S]
#   (repository root, `.devbuild` carried, built by bench/gpu/prepare_devbuild.sh and
#   bench/gpu/runs/2026-11-28/build_variants.sh)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
LIB=$PWD/.devbuild/libvgpu.so
D=/tmp/n; mkdir -p $D
turns() {  # turns DIR KIND BUDGET SEED
  mkdir -p "$1"
  python3 bench/gpu/ovh_turns.py run "$2" "$1" --lib "$LIB" --cupti-cycle-config \
    --lib2 "$PWD/.devbuild/var/libvgpu-4.so" --lib2-env VGPU_CUPTI_LIBRARY=off --pin 8-11 --one-cpu 8 \
    --limit 90 --slice-s 0.5 --rounds 12 --warmup-s 5 --budget-s "$3" --seed "$4" --startup-s 8 | grep -v "^  turns"
  for f in "$1"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-400)"; done
}
turns $D/small small "${1:-300}" 101
[ "${2:-0}" -gt 0 ] && turns $D/train train "$2" 102
tar czf "$OUT/n.tgz" -C /tmp n
date -u
