#!/bin/bash
# Issue 18, acceptance 6: launches coasting far below the limit (limiter.h Coast) against the
# library before it (.devbuild/old/libvgpu.so: c5123c4, copied there before prepare_devbuild.sh
# rebuilt .devbuild/libvgpu.so from HEAD). In-process A/B of each (toggle_ab.sh: enforced vs lifted
# in one process, gpucores 90, CUPTI as shipped), alternating old and new processes; then whole
# processes taking turns on one vCPU (ovh_turns.py: l90 = HEAD, l90b = c5123c4).
#   bash bench/gpu/runs/2026-11-28/call28q.sh [PAIRS] [TURNS_BUDGET_S]
#   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
O=/tmp/q
. bench/gpu/runs/toggle_ab.sh || exit 1
NEW=$PWD/.devbuild/libvgpu.so
OLD=$PWD/.devbuild/old/libvgpu.so
SP=${1:-150}
echo "== launch loop (small), in-process A/B: pairs of 30-unit slices"
for r in 1 2; do
  ab small_old$r "$OLD" 90 small "$SP" 30
  ab small_new$r "$NEW" 90 small "$SP" 30
done
echo "== training loop (train), in-process A/B: pairs of 3-step slices"
ab train_old "$OLD" 90 train 60 3
ab train_new "$NEW" 90 train 60 3
tar czf "$OUT/q.tgz" --exclude="*.cache" --exclude=off -C /tmp q
B=${2:-0}
if [ "$B" -gt 0 ]; then
  mkdir -p $O/turns
  python3 bench/gpu/ovh_turns.py run small $O/turns --lib "$NEW" --lib2 "$OLD" --pin 8-11 --one-cpu 8 \
    --limit 90 --slice-s 0.5 --rounds 12 --warmup-s 5 --budget-s "$B" --seed 103 --startup-s 8 | grep -v "^  turns"
  for f in $O/turns/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-60) ... $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'coasted=[0-9]*')"; done
  tar czf "$OUT/q.tgz" --exclude="*.cache" --exclude=off -C /tmp q
fi
date -u
