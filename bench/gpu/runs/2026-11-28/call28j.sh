#!/bin/bash
# Issue 18, acceptance 6: does putting every process's threads on one vCPU (ovh_turns.py --one-cpu)
# shrink the turns' per-round noise? The lent VMs' vCPUs drift in speed each on their own, and a
# process whose launching thread sits on another vCPU than native's differs as a whole. Launch
# loop in turns with --one-cpu 8, then without (the same host's control), then the training loop
# with --one-cpu 8; library at HEAD (windows spaced in launching time, 2e58439).
#   bash bench/gpu/runs/2026-11-28/call28j.sh   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
LIB=$PWD/.devbuild/libvgpu.so
turns() {  # turns DIR KIND BUDGET SEED EXTRA...
  local d=$1 kind=$2 budget=$3 seed=$4
  shift 4
  mkdir -p "$d"
  python3 bench/gpu/ovh_turns.py run "$kind" "$d" --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
    --rounds 20 --warmup-s 5 --budget-s "$budget" --seed "$seed" --startup-s 8 "$@" | grep -v "^  turns"
  for f in "$d"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-400)"; done
}
turns /tmp/j/one small 170 71 --one-cpu 8
turns /tmp/j/spread small 120 72
turns /tmp/j/train-one train 220 73 --one-cpu 8
tar czf "$OUT/j.tgz" -C /tmp j
date -u
