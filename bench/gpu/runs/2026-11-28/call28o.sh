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
#   (repository root, `.devbuild` carried: prepare_devbuild.sh, build_variants.sh probes)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
O=/tmp/o; mkdir -p $O
gcc -x c -I libvgpu/include -o $O/off - <<'C' || exit 1
#include <stddef.h>
#include <stdio.h>
#include "vgpu/region_layout.h"
int main(void) { printf("%zu\n", offsetof(struct vgpu_region, devices[0].sm_sharing)); return 0; }
C
OFF=$($O/off)
echo "sm_sharing of device record 0 at byte $OFF"
ab() {  # ab NAME LIB LIMIT KIND PAIRS UNITS [NAME=VALUE...]
  local name=$1 lib=$2 limit=$3 kind=$4 pairs=$5 units=$6
  shift 6
  rm -rf /tmp/vgpulock && mkdir -p /tmp/vgpulock && chmod 1777 /tmp/vgpulock
  rm -f $O/$name.cache
  taskset -c 8-11 env LD_PRELOAD="$lib" CUDA_DEVICE_SM_LIMIT="$limit" GPU_CORE_UTILIZATION_POLICY=default \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=$O/$name.cache VGPU_SM_STATS=1 "$@" \
    python3 bench/gpu/sm_workloads.py "$kind" --toggle-ab "$OFF" --toggle-pairs "$pairs" \
    --toggle-units "$units" --one-cpu 8 --warmup 3 >$O/$name.json 2>$O/$name.err
  python3 - "$name" $O/$name.json <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
except Exception as e:
    print("%-10s no result (%s)" % (sys.argv[1], e)); sys.exit()
print("%-10s wall %+.2f %% [%+.2f, %+.2f] slower %d/%d   cpu %+.2f %% [%+.2f, %+.2f]   rate lifted %.0f enforced %.0f  slice %.3f s" % (
    sys.argv[1], r["wall"]["median_pct"], *r["wall"]["ci95"], r["wall"]["slower_in"], r["pairs"],
    r["cpu"]["median_pct"], *r["cpu"]["ci95"], r["rate_lifted"], r["rate_enforced"], r["slice_s"]))
PY
  grep -a 'sm-limit\]' $O/$name.err | tail -1 | cut -c1-330
}
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
