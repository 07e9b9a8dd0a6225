#!/bin/bash
# Issue 18: after a calibration window counts as confirming unless it finds the scale in use
# undercharged (calibration.h ScaleHolds): do the windows of a steady launch loop space out on the
# real GPU? The launch loop alone at 90 for 40 s, then one batch of whole processes taking turns
# (ovh_turns.py, as call28g.sh). Its stats lines: attaches, windows, moved, rescaled.
#   bash bench/gpu/runs/2026-11-28/call28i.sh   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
LIB=$PWD/.devbuild/libvgpu.so
W=bench/gpu/sm_workloads.py
O=/tmp/i; mkdir -p $O
. bench/gpu/runs/whole_process.sh  # one NAME LIMIT KIND ARGS...
one small_l90 90 small --warmup 3 --window 40
T=/tmp/turns; mkdir -p $T
python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 24 --warmup-s 5 --budget-s 100 --seed 61 --startup-s 8 | grep -v "^  turns"
for f in "$T"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-520)"; done
tar czf "$OUT/turns.tgz" -C /tmp turns i
date -u
