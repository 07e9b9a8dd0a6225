#!/bin/bash
# Issue 18, acceptance 6: where a limit that does not bind costs a launch-heavy loop its ~4 %.
# call28n.sh showed it is not CUPTI (l90b, never attached, cost as much as l90). Here each process
# measures itself: sm_workloads.py --toggle-ab (bench/gpu/toggle_ab.py) alternates slices with the
# limit enforced and lifted (the region's sm_sharing flag, policy default) in one process on one
# vCPU, so the spread between whole processes drops out. Configs, all at gpucores 90:
#   aa    HEAD's library without a limit: flipping the flag changes nothing (the A/A control)
#   head  HEAD's library (CUPTI as shipped)
#   pN    HEAD with probe_switches.patch (build_variants.sh probes), VGPU_CUPTI_LIBRARY=off:
#         p1 never waits (hooks, event marks, measuring thread), p3 p1 without event marks,
#         p7 p3 without the measuring thread, p8 the before-launch hook stops once it found the
#         device limited
#   bash bench/gpu/runs/2026-11-28/call28o.sh [SMALL_PAIRS] [TRAIN_PAIRS]
#   (repository root, `.devbuild` carried: prepare_devbuild.sh, PROBES="1 3 7 8" build_variants.sh probes)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
O=/tmp/o
. bench/gpu/runs/toggle_ab.sh || exit 1
P=$PWD/.devbuild/probe
L=$PWD/.devbuild/libvgpu.so
SP=${1:-150}
echo "== launch loop (small): pairs of 30-unit slices (30 x 200 launches + a sync each)"
ab small_aa "$L" 0 small "$SP" 30
ab small_head "$L" 90 small "$SP" 30
for n in 1 3 7 8; do ab small_p$n "$P/libvgpu-$n.so" 90 small "$SP" 30 VGPU_CUPTI_LIBRARY=off; done
ab small_aa2 "$L" 0 small "$SP" 30
TP=${2:-60}
if [ "$TP" -gt 0 ]; then
  echo "== training loop (train): pairs of 3-step slices"
  ab train_aa "$L" 0 train "$TP" 3
  ab train_head "$L" 90 train "$TP" 3
  ab train_p1 "$P/libvgpu-1.so" 90 train "$TP" 3 VGPU_CUPTI_LIBRARY=off
  ab train_p7 "$P/libvgpu-7.so" 90 train "$TP" 3 VGPU_CUPTI_LIBRARY=off
fi
tar czf "$OUT/o.tgz" --exclude="*.cache" --exclude=off -C /tmp o
date -u
