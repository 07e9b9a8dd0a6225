#!/bin/bash
# Issue 18, acceptance 6, next step (prepared 2026-11-28 late night, not run: no device time left).
# What a limit that does not bind costs once a process is past its start: the in-process A/B of
# call28r.sh after a 40-s warm-up instead of 8, when the start-up stretch with CUPTI attached and
# the first calibration windows (10 and 20 s of launching after it; each costs a launch-heavy
# process ~25 ms) are behind it, for the launch and the training loop (HEAD's library, launches
# coasting). Against call28r.sh's ~1.4 %, the difference is what the early windows cost.
#   bash bench/gpu/runs/2026-11-28/call28s.sh [PAIRS]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
O=/tmp/s
WARMUP=40
. bench/gpu/runs/toggle_ab.sh || exit 1
for r in 1 2; do
  ab small_new$r "$PWD/.devbuild/libvgpu.so" 90 small "${1:-150}" 30
  ab train_new$r "$PWD/.devbuild/libvgpu.so" 90 train "${1:-150}" 3
done
tar czf "$OUT/s.tgz" --exclude="*.cache" --exclude=off -C /tmp s
