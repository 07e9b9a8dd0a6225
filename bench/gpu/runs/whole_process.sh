#!/bin/bash
# Sourced by the device-call scripts in the dated folders: `one NAME LIMIT KIND ARGS...` runs one
# sm_workloads.py process the way a pod starts one, pinned to cores 8-11, natively when LIMIT is 0
# or else with libvgpu preloaded at gpucores LIMIT (policy force, a fresh /tmp/vgpulock, its stats
# line at exit), and prints its result's main keys and that stats line. Needs O (output folder), LIB
# (libvgpu.so) and W (sm_workloads.py) set by the caller.
one() {
  local name=$1 limit=$2
  shift 2
  if [ "$limit" = 0 ]; then
    taskset -c 8-11 env -u LD_PRELOAD python3 "$W" "$@" >"$O/$name.json" 2>"$O/$name.err"
  else
    rm -rf /tmp/vgpulock
    mkdir -p /tmp/vgpulock
    chmod 1777 /tmp/vgpulock
    taskset -c 8-11 env LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT="$limit" GPU_CORE_UTILIZATION_POLICY=force \
      CUDA_DEVICE_MEMORY_SHARED_CACHE="$O/$name.cache" VGPU_SM_STATS=1 \
      python3 "$W" "$@" >"$O/$name.json" 2>"$O/$name.err"
  fi
  python3 - "$name" "$O/$name.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    r = json.loads(open(path).read().strip().splitlines()[-1])
except Exception as e:
    print("%-14s no result (%s)" % (name, e)); sys.exit()
keys = ("rate", "p50_ms", "p99_ms", "max_ms", "served", "unserved", "cpu_pct")
print("%-14s %s" % (name, " ".join("%s=%s" % (k, round(r[k], 3) if isinstance(r[k], float) else r[k]) for k in keys if k in r)))
PY
  grep -a 'sm-limit\]' "$O/$name.err" | cut -c1-520
}
