#!/bin/bash
# Sourced by device-call scripts: `ab NAME LIB LIMIT KIND PAIRS UNITS [NAME=VALUE...]` runs one
# sm_workloads.py process with LIB preloaded at gpucores LIMIT (policy default, a fresh
# /tmp/vgpulock, its stats line at exit), pinned to cores 8-11 with every thread but the measuring
# one on core 8, and after a warm-up of WARMUP s (default 3) its in-process A/B (--toggle-ab, bench/gpu/toggle_ab.py):
# PAIRS pairs of UNITS-unit slices with the limit enforced and lifted. Prints one line per process.
# Needs O (output folder) set by the caller; writes $O/NAME.json, .err, .cache.
mkdir -p "$O"
gcc -x c -I libvgpu/include -o $O/off - <<'C' || return 1
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
