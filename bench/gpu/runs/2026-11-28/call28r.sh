#!/bin/bash
# call28q.sh's in-process A/B of the launch loop again with an 8-s warm-up, so that the start-up
# stretch with CUPTI attached (records until the first calibration, ~3.6 s) is over before the
# first slice; old (c5123c4) and new (HEAD) alternating.
#   bash bench/gpu/runs/2026-11-28/call28r.sh [PAIRS]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
O=/tmp/r
WARMUP=8
. bench/gpu/runs/toggle_ab.sh || exit 1
for r in 1 2; do
  ab small_old$r "$PWD/.devbuild/old/libvgpu.so" 90 small "${1:-100}" 30
  ab small_new$r "$PWD/.devbuild/libvgpu.so" 90 small "${1:-100}" 30
done
tar czf "$OUT/r.tgz" --exclude="*.cache" --exclude=off -C /tmp r
