#!/bin/bash
# call28q.sh's in-process A/B of the launch loop again with an 8-s warm-up, so that the start-up
# stretch with CUPTI attached (records until the first calibration, ~3.6 s) is over before the
# first slice; old (c5123c4) and new (HEAD) alternating. Ran as `call28r.sh 100`.
# Next step (prepared, not run: no device time left): `WARMUP=40 bash call28r.sh 150 "small train"`,
# past the first calibration windows too (10 and 20 s of launching after the start-up stretch;
# each costs a launch-heavy process ~25 ms): against the 8-s run's ~1.4 %, the difference is what
# the early windows cost. Training slices are 3 steps.
#   bash bench/gpu/runs/2026-11-28/call28r.sh [PAIRS] [KINDS]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
O=/tmp/r
WARMUP=${WARMUP:-8}
. bench/gpu/runs/toggle_ab.sh || exit 1
for kind in ${2:-small}; do
  units=30
  [ "$kind" = train ] && units=3
  for r in 1 2; do
    ab ${kind}_old$r "$PWD/.devbuild/old/libvgpu.so" 90 "$kind" "${1:-100}" $units
    ab ${kind}_new$r "$PWD/.devbuild/libvgpu.so" 90 "$kind" "${1:-100}" $units
  done
done
tar czf "$OUT/r.tgz" --exclude="*.cache" --exclude=off -C /tmp r
