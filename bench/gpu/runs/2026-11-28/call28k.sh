#!/bin/bash
# Issue 18, acceptance 6, the measurement itself: whole processes taking turns with every process's
# threads on one vCPU (ovh_turns.py --one-cpu 8; call28j.sh showed the launch loop's A/A interval
# shrink from 14 to 3.4 points with it). More batches of fresh processes with fewer rounds each
# (each process still has some speed of its own), the launch loop then the training loop. Beside
# them nvidia-smi logs the GPU's SM clock and P-state every 250 ms (clocks.csv): does a limited
# launch loop that stays attached to CUPTI see slow kernels at a low clock?
#   bash bench/gpu/runs/2026-11-28/call28k.sh [SEED]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
SEED=${1:-81}
LIB=$PWD/.devbuild/libvgpu.so
D=/tmp/k$SEED
mkdir -p $D
taskset -c 1 nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,utilization.gpu,power.draw \
  --format=csv,noheader -lms 250 >$D/clocks.csv 2>&1 &
SMI=$!
turns() {  # turns DIR KIND BUDGET SEED
  mkdir -p "$1"
  python3 bench/gpu/ovh_turns.py run "$2" "$1" --lib "$LIB" --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 \
    --rounds 12 --warmup-s 5 --budget-s "$3" --seed "$4" --startup-s 8 | grep -v "^  turns"
  for f in "$1"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-400)"; done
}
turns $D/small small 255 "$SEED"
turns $D/train train 290 $((SEED + 1))
kill $SMI
tar czf "$OUT/k.tgz" -C /tmp "k$SEED"
date -u
