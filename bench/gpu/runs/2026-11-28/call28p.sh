#!/bin/bash
# Issue 18, acceptance 6: which of the event marks costs the launch loop its ~1.6 % (call28o.sh:
# the limited path with marks +2.1 %, without +0.5 %, in-process A/B). Probe builds of HEAD
# (build_variants.sh probes; VGPU_CUPTI_LIBRARY=off, never waiting, gpucores 90): p1 all marks,
# p3 none, p17 no end mark before a sync, p33 no start marks, p65 no periodic end marks, p113 none
# of those three (only the measuring thread's closing of batches left open for 2 ms).
#   bash bench/gpu/runs/2026-11-28/call28p.sh [PAIRS]
#   (repository root, `.devbuild` carried: prepare_devbuild.sh, build_variants.sh probes)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
O=/tmp/p
. bench/gpu/runs/toggle_ab.sh || exit 1
P=$PWD/.devbuild/probe
SP=${1:-150}
echo "== launch loop (small): pairs of 30-unit slices (30 x 200 launches + a sync each)"
ab small_aa "$PWD/.devbuild/libvgpu.so" 0 small "$SP" 30
for n in 1 3 17 33 65 113 1; do ab small_p$n "$P/libvgpu-$n.so" 90 small "$SP" 30 VGPU_CUPTI_LIBRARY=off; done
tar czf "$OUT/p.tgz" --exclude="*.cache" --exclude=off -C /tmp p
date -u
