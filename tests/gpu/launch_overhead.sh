#!/usr/bin/env bash
# Launch overhead of libvgpu with an SM limit set but not binding, on a real GPU, with two probes:
#   driver  empty-kernel cuLaunchKernel loop (bench/libvgpu/limited_launch_cost.cu `launches`)
#   torch   a PyTorch loop of tiny elementwise ops (tests/gpu/sm_limit_workload.py `launch`: the
#           runtime's path, reached through cuGetProcAddress)
# Configurations: native; `preload` (libvgpu loaded, no SM variable: what every pod pays); limit
# 100; limit 30 with policy `disable`; limit 99 (the limited path, not binding). They alternate in
# ROUNDS rounds (default 5) on one pinned core, the order rotating from round to round; each
# configuration's median paired overhead against the native run of the same round is printed.
# The limited path's self-timing (VGPU_SM_STATS=2, one extra run: the timing itself costs ~80 ns
# per launch) is printed for limit 99.
#   VGPU_LIBRARY=.devbuild/libvgpu.so tests/gpu/launch_overhead.sh [ROUNDS] [PROBES]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${VGPU_LIBRARY:?set VGPU_LIBRARY to libvgpu.so}
ROUNDS=${1:-5}
PROBES=${2:-driver torch}
W=$(mktemp -d)
nvcc -O2 -std=c++17 -o "$W/lcc" "$ROOT/bench/libvgpu/limited_launch_cost.cu" -lcuda || exit 1
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 3); fi
rate() { "$@" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["launches_per_s"])'; }
probe() {  # probe NAME
  case $1 in
    driver) rate "${PIN[@]}" "$W/lcc" launches 50000 ;;
    torch) START_AT=0 END_AT=0 rate "${PIN[@]}" python3 "$ROOT/tests/gpu/sm_limit_workload.py" launch ;;
  esac
}
run_config() {  # run_config PROBE CONFIG TAG
  local p=$1 c=$2 cache="$W/$3"
  case $c in
    native) probe "$p" ;;
    preload) LD_PRELOAD=$LIB CUDA_DEVICE_MEMORY_SHARED_CACHE=$cache probe "$p" ;;
    limit100) LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=100 CUDA_DEVICE_MEMORY_SHARED_CACHE=$cache probe "$p" ;;
    disable) LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=disable \
      CUDA_DEVICE_MEMORY_SHARED_CACHE=$cache probe "$p" ;;
    limit99) LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=99 GPU_CORE_UTILIZATION_POLICY=force \
      CUDA_DEVICE_MEMORY_SHARED_CACHE=$cache probe "$p" ;;
  esac
}
CONFIGS=(native preload limit100 disable limit99)
for round in $(seq 1 "$ROUNDS"); do
  for p in $PROBES; do
    for k in 0 1 2 3 4; do
      c=${CONFIGS[$(((k + round - 1) % 5))]}
      echo "$p $c $round $(run_config "$p" "$c" "$p$c$round")"
    done
  done
done >"$W/rates"
LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=99 GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=2 \
  CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/d "${PIN[@]}" "$W/lcc" launches 50000 >/dev/null 2>"$W/stats"
grep "per launch" "$W/stats" | sed 's/.*pid [0-9]*: /driver limit99 self-timing: /' | head -5
python3 - "$W/rates" <<'PYEOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 4:
        continue
    try:
        by.setdefault((f[0], f[1]), {})[f[2]] = float(f[3])
    except ValueError:
        pass
# Every configuration but limit99 runs the same per-launch code (one load and one branch): their
# spread against each other is the measurement's noise, not libvgpu's cost.
for probe in ("driver", "torch"):
    nat = by.get((probe, "native"), {})
    for name in ("native", "preload", "limit100", "disable", "limit99"):
        v = by.get((probe, name), {})
        if not v:
            continue
        paired = [100 * (nat[r] / v[r] - 1) for r in v if r in nat] if name != "native" else []
        med = statistics.median(v.values())
        print("%-6s %-9s median %8.0f launches/s%s  runs %s%s" % (
            probe, name, med,
            " (%+.2f %% vs native's median)" % (100 * (statistics.median(nat.values()) / med - 1))
            if paired else "",
            " ".join("%.0f" % v[r] for r in sorted(v, key=int)),
            "; paired %s, median %+.2f %%" % (" ".join("%+.1f" % x for x in paired),
                                              statistics.median(paired)) if paired else ""))
PYEOF
rm -rf "$W"
