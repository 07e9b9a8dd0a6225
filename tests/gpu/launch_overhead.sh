#!/usr/bin/env bash
# Launch overhead of libvgpu with an SM limit set but not binding, on a real GPU: empty-kernel
# launch rates (bench/libvgpu/limited_launch_cost.cu), native and under libvgpu with limit 100,
# policy `disable`, and limit 99 (limited path, not binding), alternating in 5 rounds on one pinned
# core; prints each configuration's median and its median paired overhead against the native run
# of the same round. The limited path's self-timing (VGPU_SM_STATS=2, one extra run: the timing
# itself costs ~80 ns per launch) is printed for limit 99.
#   VGPU_LIBRARY=.devbuild/libvgpu.so tests/gpu/launch_overhead.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${VGPU_LIBRARY:?set VGPU_LIBRARY to libvgpu.so}
W=$(mktemp -d)
nvcc -O2 -std=c++17 -o "$W/lcc" "$ROOT/bench/libvgpu/limited_launch_cost.cu" -lcuda || exit 1
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 3); fi
rate() { "$@" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["launches_per_s"])'; }
for round in 1 2 3 4 5; do
  echo "native $(rate "${PIN[@]}" "$W/lcc" launches 50000)"
  echo "limit100 $(LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=100 CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/a$round \
    rate "${PIN[@]}" "$W/lcc" launches 50000)"
  echo "disable $(LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=disable \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/b$round rate "${PIN[@]}" "$W/lcc" launches 50000)"
  echo "limit99 $(LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=99 GPU_CORE_UTILIZATION_POLICY=force \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/c$round rate "${PIN[@]}" "$W/lcc" launches 50000)"
done >"$W/rates"
LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=99 GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=2 \
  CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/d "${PIN[@]}" "$W/lcc" launches 50000 >/dev/null 2>"$W/stats"
grep "per launch" "$W/stats" | sed 's/.*pid [0-9]*: /limit99 self-timing: /' | head -5
python3 - "$W/rates" <<'PYEOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
by = {}
for name, value in rows:
    by.setdefault(name, []).append(float(value))
for name in ("native", "limit100", "disable", "limit99"):
    v = by.get(name, [])
    if not v:
        continue
    paired = [100 * (n / x - 1) for n, x in zip(by["native"], v)] if name != "native" else []
    print("%-9s median %8.0f launches/s  runs %s%s" % (
        name, statistics.median(v), " ".join("%.0f" % x for x in v),
        "  median paired overhead %+.2f %%" % statistics.median(paired) if paired else ""))
PYEOF
rm -rf "$W"
