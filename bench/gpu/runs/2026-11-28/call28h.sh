#!/bin/bash
# Issue 18, acceptance 6 and a recheck of 1 and 4, on the library with the stats line's windows,
# moved and rescaled counters (bd86686's behaviour, call28g.sh's, plus the counters).
#   bash bench/gpu/runs/2026-11-28/call28h.sh TRAIN_BUDGET_S SMALL_BUDGET_S
# sanity (as call28f.sh, shorter): the launch loop alone at 90 for 25 s (its windows), the
# open-loop inference at 50 against native (p99), the matmul loop at 30 against native (binding);
# then whole processes taking turns as call28g.sh. Repository root, `.devbuild` carried.
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
W=bench/gpu/sm_workloads.py
O=/tmp/h; mkdir -p $O
. bench/gpu/runs/whole_process.sh  # one NAME LIMIT KIND ARGS...
one small_l90 90 small --warmup 3 --window 25
one infer_n 0 infer-open --rate 40 --warmup 3 --window 12
one infer_l50 50 infer-open --rate 40 --warmup 3 --window 12
one matmul_n 0 matmul --warmup 3 --window 5
one matmul_l30 30 matmul --warmup 3 --window 5
date -u
T=/tmp/turns; mkdir -p $T
python3 bench/gpu/ovh_turns.py run train $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 20 --warmup-s 5 --budget-s "${1:-200}" --seed 51 --startup-s 20 | grep -v "^  turns"
date -u
python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 20 --warmup-s 5 --budget-s "${2:-170}" --seed 52 --startup-s 8 | grep -v "^  turns"
date -u
for f in "$T"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-520)"; done
python3 bench/gpu/ovh_turns.py report $T > $T/report.txt
tar czf "$OUT/turns.tgz" -C /tmp turns
tar czf "$OUT/h.tgz" -C /tmp h
date -u
