#!/bin/bash
# The in-process A/B of a limit enforced and lifted (bench/gpu/toggle_ab.py; docs/gpu-results.md,
# "SM limit: overhead of a limit that does not bind"): one sm_workloads.py process with LIB preloaded
# at gpucores LIMIT (policy default, a fresh /tmp/vgpulock, its stats line at exit), pinned to cores
# 8-11 with every thread but the measuring one on core 8; after a warm-up of WARMUP s (default 3) it
# flips its region's sm_sharing flag between slices: PAIRS pairs of UNITS-unit slices with the limit
# enforced and lifted, in random order. Prints one line per process (median wall and CPU overhead
# of enforced over lifted, 95 % interval) and its stats line. Writes O/NAME.json, .err, .cache.
#   device: bash bench/gpu/toggle_ab.sh O NAME LIB LIMIT KIND PAIRS UNITS [NAME=VALUE...]
#           e.g. bash bench/gpu/toggle_ab.sh /tmp/ab small1 $PWD/.devbuild/libvgpu.so 90 small 150 30
#   or sourced (O set by the caller): . bench/gpu/toggle_ab.sh; ab NAME LIB LIMIT KIND PAIRS UNITS ...
# KIND: small (the launch loop; 30 units of 200 launches a slice) or train (3 steps a slice).
# Control: the library with no limit (the flag changes nothing). Needs gcc and 12 CPUs.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  [ $# -ge 7 ] || { sed -n 2,14p "$0" >&2; exit 2; }
  cd "$(dirname "$0")/../.." || exit 1
  O=$1
  shift
fi
mkdir -p "$O"
gcc -x c -I libvgpu/include -o $O/off - <<'C' || { return 1 2>/dev/null || exit 1; }
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
    --toggle-units "$units" --one-cpu 8 --warmup "${WARMUP:-3}" >$O/$name.json 2>$O/$name.err
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
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ab "$@"
fi
