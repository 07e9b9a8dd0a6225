#!/usr/bin/env bash
# Launch overhead of libvgpu with an SM limit set but not binding, on a real GPU, with three probes:
#   paired  one process launching an empty kernel through libvgpu's hook and through the driver's
#           own entry point in alternating blocks (tests/libvgpu/support/paired_launch.c): the
#           hook's cost with the host's drift cancelled out of every pair; each configuration
#           runs once per round and prints the median paired overhead and its quartiles
#   driver  empty-kernel cuLaunchKernel loop (bench/libvgpu/limited_launch_cost.cu `launches`)
#   torch   a PyTorch loop of tiny elementwise ops (bench/gpu/sm_limit_workload.py `launch`: the
#           runtime's path, reached through cuGetProcAddress)
# The last two compare separate processes, whose rates spread by ±10-25 % on the GPU machines.
# Configurations: native; `preload` (libvgpu loaded, no SM variable: what every pod pays); limit
# 100; limit 30 with policy `disable`; limit 99 (the limited path, not binding). They alternate in
# ROUNDS rounds (default 5) on one pinned core, the order rotating from round to round; each
# configuration's median paired overhead against the native run of the same round is printed.
# The limited path's self-timing (VGPU_SM_STATS=2, one extra run: the timing itself costs ~80 ns
# per launch) is printed for limit 99.
#   VGPU_LIBRARY=.devbuild/libvgpu.so bench/gpu/launch_overhead.sh [ROUNDS] [PROBES]
# PROBES: default "paired driver torch".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${VGPU_LIBRARY:?set VGPU_LIBRARY to libvgpu.so}
ROUNDS=${1:-5}
PROBES=${2:-paired driver torch}
W=$(mktemp -d)
nvcc -O2 -std=c++17 -o "$W/lcc" "$ROOT/bench/libvgpu/limited_launch_cost.cu" -lcuda || exit 1
gcc -O2 -std=gnu11 -I"${CUDA_HOME:-/usr/local/cuda}/include" -o "$W/paired" \
  "$ROOT/tests/libvgpu/support/paired_launch.c" -lcuda -ldl || exit 1
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 3); fi
rate() { "$@" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["launches_per_s"])'; }
probe() {  # probe NAME
  case $1 in
    paired) "${PIN[@]}" "$W/paired" 2000 300 | tail -1 ;;
    driver) rate "${PIN[@]}" "$W/lcc" launches 50000 ;;
    torch) START_AT=0 END_AT=0 rate "${PIN[@]}" python3 "$ROOT/bench/gpu/sm_limit_workload.py" launch ;;
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
      if [ "$p" = paired ]; then
        echo "$c $round $(run_config "$p" "$c" "$p$c$round")" >>"$W/paired_results"
      else
        echo "$p $c $round $(run_config "$p" "$c" "$p$c$round")"
      fi
    done
  done
done >"$W/rates"
LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=99 GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=2 \
  CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/d "${PIN[@]}" "$W/lcc" launches 50000 >/dev/null 2>"$W/stats"
grep "per launch" "$W/stats" | sed 's/.*pid [0-9]*: /driver limit99 self-timing: /' | head -5
python3 - "$W/rates" "$W/paired_results" <<'PYEOF'
import json, os, statistics, sys
# The in-process A/B: per configuration and round, the median over pairs of hooked/direct - 1.
paired = {}
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        name, rnd, js = line.split(" ", 2)
        try:
            paired.setdefault(name, []).append(json.loads(js))
        except ValueError:
            print("paired %-9s round %s failed: %s" % (name, rnd, js.strip()))
for name in ("native", "preload", "limit100", "disable", "limit99"):
    runs = [r for r in paired.get(name, []) if "overhead_pct" in r]
    if not runs:
        continue
    print("paired %-9s hook %s direct %s ns per launch; overhead per round %s (quartiles %s); "
          "median %+.2f %%%s" % (
              name, "/".join("%.0f" % r["hooked_ns"] for r in runs),
              "/".join("%.0f" % r["direct_ns"] for r in runs),
              " ".join("%+.2f" % r["overhead_pct"] for r in runs),
              " ".join("%+.2f..%+.2f" % (r["overhead_p25"], r["overhead_p75"]) for r in runs),
              statistics.median(r["overhead_pct"] for r in runs),
              " (same entry point: the method's noise)" if runs[0]["hooked_is_direct"] else ""))
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
