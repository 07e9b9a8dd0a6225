#!/bin/bash
# Issue 18, acceptance 6, with the measuring thread's 8-ms passes while nothing is near its limit
# and calibration windows that space out (10 s, then up to 60 s) while they find the same scale.
#   bash bench/gpu/runs/2026-11-28/call28f.sh PARTS [TURNS_BUDGET_S]
# PARTS: any of "sanity small train" (repository root, `.devbuild` carried). sanity: each workload
# natively and limited, one after the other, pinned to cores 8-11, with the limiter's stats line
# (passes, attaches, attached_ms): the launch loop at 90 for 25 s (its windows), the training loop at
# 90, the open-loop inference at 50 (p99 against native), the matmul loop at 30 (binding: share of
# native). small / train: whole processes taking turns (ovh_turns.py) in 0.5-s slices after a 5-s
# warm-up each; small adds a fifth process, the limit with CUDA events only (l90ev).
cd "$(dirname "$0")/../../../.." || exit 1
PARTS=${1:-sanity small}
TB=${2:-300}
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
W=bench/gpu/sm_workloads.py
O=/tmp/f; mkdir -p $O
part() { [[ " $PARTS " == *" $1 "* ]]; }
. bench/gpu/runs/whole_process.sh  # one NAME LIMIT KIND ARGS...
if part sanity; then
  one small_n 0 small --warmup 3 --window 10
  one small_l90 90 small --warmup 3 --window 25
  one train_l90 90 train --warmup 4 --window 10
  one infer_n 0 infer-open --rate 40 --warmup 3 --window 12
  one infer_l50 50 infer-open --rate 40 --warmup 3 --window 12
  one matmul_n 0 matmul --warmup 3 --window 6
  one matmul_l30 30 matmul --warmup 3 --window 6
  date -u
fi
if part sanity && ! grep -q '"rate"' $O/small_l90.json; then
  echo "the limited launch loop gave no result: no turns"; tail -20 $O/small_l90.err; PARTS=""
fi
T=/tmp/turns; mkdir -p $T
if part small; then
  python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
    --rounds 34 --warmup-s 5 --events-config --budget-s "$TB" --seed 31 --startup-s 8
  date -u
fi
if part train; then
  python3 bench/gpu/ovh_turns.py run train $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
    --rounds 40 --warmup-s 5 --budget-s "$TB" --seed 32 --startup-s 20
  date -u
fi
if part small || part train; then
  for f in "$T"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-460)"; done
  python3 bench/gpu/ovh_turns.py report $T > $T/report.txt; cat $T/report.txt
  tar czf "$OUT/turns.tgz" -C /tmp turns
fi
tar czf "$OUT/f.tgz" -C /tmp f
date -u
