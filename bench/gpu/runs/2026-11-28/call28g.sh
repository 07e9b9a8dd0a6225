#!/bin/bash
# Issue 18, acceptance 6, after the work's signature leaves out the measuring thread's first pass
# after a sleep (intermittent tenants, such as processes taking turns, re-attached CUPTI every 5 s:
# 10-14 attaches in ~110 s in call28f.sh's turns).
#   bash bench/gpu/runs/2026-11-28/call28g.sh TRAIN_BUDGET_S SMALL_BUDGET_S
# Whole processes taking turns (ovh_turns.py) in 0.5-s slices after a 5-s warm-up each: the
# training loop, then the launch loop (native, native2, preload, l90); repository root, `.devbuild`
# carried.
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
T=/tmp/turns; mkdir -p $T
python3 bench/gpu/ovh_turns.py run train $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 20 --warmup-s 5 --budget-s "${1:-290}" --seed 41 --startup-s 20
date -u
python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 20 --warmup-s 5 --budget-s "${2:-230}" --seed 42 --startup-s 8
date -u
for f in "$T"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-460)"; done
python3 bench/gpu/ovh_turns.py report $T > $T/report.txt; cat $T/report.txt
tar czf "$OUT/turns.tgz" -C /tmp turns
date -u
