#!/bin/bash
# Issue 18, acceptance 6, second design: whole processes taking turns (bench/gpu/ovh_turns.py).
#   bash bench/gpu/runs/2026-11-28/call28b.sh [SMALL_BUDGET_S TRAIN_BUDGET_S]
# One device call from the repository root with `.devbuild` carried. Call A (call28.sh, sequential
# whole processes, pinned, fixed work) showed the host's speed moving by 10-15 % between processes
# tens of seconds apart (steal ~0): too much for 1-2 %. Here each batch starts four whole processes
# (native, native2 = A/A, preload, l90), all pinned to cores 8-11, which take turns on the GPU
# in slices of the same fixed work (~1.9 s of the native loop), in a random order each round, so
# that a round's four slices see nearly the same host. Batches of fresh processes repeat until
# each loop's budget. If the serve mode fails its smoke test, this falls back to call28.sh.
cd "$(dirname "$0")/../../../.." || exit 1
SB=${1:-250} TB=${2:-285}
R=$OUT
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u; uname -r
LIB=$PWD/.devbuild/libvgpu.so
W=bench/gpu/sm_workloads.py
smoke=$(printf 'run 3\nquit\n' | taskset -c 8-11 python3 $W small --serve 2>/tmp/smoke.err)
echo "smoke: $(echo "$smoke" | tr '\n' '|' | cut -c1-200)"
if ! echo "$smoke" | grep -q '^done '; then
  echo "serve mode failed; falling back to call28.sh"; tail -5 /tmp/smoke.err
  exec bash bench/gpu/runs/2026-11-28/call28.sh 2 200 260
fi
O=/tmp/turns
rm -rf $O; mkdir -p $O
python3 bench/gpu/ovh_turns.py run small $O --lib "$LIB" --pin 8-11 --limit 90 --rounds 8 \
  --budget-s "$SB" --seed 11 --startup-s 8
date -u
python3 bench/gpu/ovh_turns.py run train $O --lib "$LIB" --pin 8-11 --limit 90 --rounds 8 \
  --budget-s "$TB" --seed 12 --startup-s 20
date -u
for f in "$O"/turns_*_l90.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-230)"; done
for f in "$O"/turns_*_preload.err "$O"/turns_*_native*.err; do [ -s "$f" ] && echo "$(basename "$f"): $(tail -2 "$f" | cut -c1-200)"; done
python3 bench/gpu/ovh_turns.py report $O > $O/report.txt
tar czf "$R/turns.tgz" -C /tmp turns
date -u
