#!/bin/bash
# Issue 18, acceptance 6, after CUPTI detaches while a tenant is far below its limit.
#   bash bench/gpu/runs/2026-11-28/call28e.sh PARTS [TURNS_BUDGET_S]
# PARTS: any of "sanity small train" (one device call each or together, repository root,
# `.devbuild` carried). sanity: each workload natively and limited, one after the other, pinned to
# cores 8-11, with the limiter's stats line (attaches, attached_ms): the launch loop and the training
# loop at 90 (not binding; the training loop limited only, for its stats), the open-loop inference at 50 (p99), the matmul loop at 30 (binding:
# share of native). small / train: whole processes taking turns (ovh_turns.py, as call28b.sh).
cd "$(dirname "$0")/../../../.." || exit 1
PARTS=${1:-sanity small}
TB=${2:-300}
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
W=bench/gpu/sm_workloads.py
O=/tmp/e; mkdir -p $O
part() { [[ " $PARTS " == *" $1 "* ]]; }
. bench/gpu/runs/whole_process.sh  # one NAME LIMIT KIND ARGS...
if part sanity; then
  one small_n 0 small --warmup 3 --window 10
  one small_l90 90 small --warmup 3 --window 10
  one train_l90 90 train --warmup 4 --window 10  # its stats line: attached how long
  one infer_n 0 infer-open --rate 40 --warmup 3 --window 15
  one infer_l50 50 infer-open --rate 40 --warmup 3 --window 15
  one matmul_n 0 matmul --warmup 3 --window 6
  one matmul_l30 30 matmul --warmup 3 --window 6
  date -u
fi
if part sanity && ! grep -q '"rate"' $O/small_l90.json; then
  echo "the limited launch loop gave no result: no turns"; tail -20 $O/small_l90.err; PARTS=""
fi
T=/tmp/turns; mkdir -p $T
if part small; then
  python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --rounds 8 \
    --budget-s "$TB" --seed 21 --startup-s 8
  date -u
fi
if part train; then
  python3 bench/gpu/ovh_turns.py run train $T --lib "$LIB" --pin 8-11 --limit 90 --rounds 8 \
    --budget-s "$TB" --seed 22 --startup-s 20
  date -u
fi
if part small || part train; then
  for f in "$T"/turns_*_l90.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-400)"; done
  python3 bench/gpu/ovh_turns.py report $T > $T/report.txt; cat $T/report.txt
  tar czf "$OUT/turns.tgz" -C /tmp turns
fi
tar czf "$OUT/e.tgz" -C /tmp e
date -u
