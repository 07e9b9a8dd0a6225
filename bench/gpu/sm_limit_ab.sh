#!/usr/bin/env bash
# Same-run A/B of two builds of libvgpu.so on the SM limiter's launch-bound costs, on a real GPU:
#  1. empty-kernel launch rate with limit 99 (the limited path, not binding) against native
#     (bench/libvgpu/limited_launch_cost.cu), and each build's self-timed hook cost;
#  2. the launch-bound PyTorch loop (bench/gpu/sm_limit_workload.py `small`) at limits 30 and 70.
# Native, A and B alternate within every round, each pinned to the same core, so that the host's
# drift (±30 % between identical native runs on the GPU machine) hits all three alike.
#   VGPU_LIBRARY_A=old/libvgpu.so VGPU_LIBRARY_B=new/libvgpu.so bench/gpu/sm_limit_ab.sh [ROUNDS]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
A=${VGPU_LIBRARY_A:?set VGPU_LIBRARY_A to a libvgpu.so}
B=${VGPU_LIBRARY_B:?set VGPU_LIBRARY_B to a libvgpu.so}
ROUNDS=${1:-4}
WIN=${AB_WINDOW:-4}
WARM=${AB_WARMUP:-4}
W=$(mktemp -d)
nvcc -O2 -std=c++17 -o "$W/lcc" "$ROOT/bench/libvgpu/limited_launch_cost.cu" -lcuda || exit 1
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 3); fi
mkdir -p /tmp/vgpulock
last() { tail -1 | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d.get("launches_per_s", d.get("iters_per_s")))'; }
limited() {  # limited LIB LIMIT TAG CMD...
  local lib=$1 limit=$2 tag=$3; shift 3
  LD_PRELOAD=$lib CUDA_DEVICE_SM_LIMIT=$limit GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1 \
    CUDA_DEVICE_MEMORY_SHARED_CACHE="$W/$tag.cache" "${PIN[@]}" "$@" 2>>"$W/stats-$tag"
}
for round in $(seq 1 "$ROUNDS"); do
  echo "launch native $("${PIN[@]}" "$W/lcc" launches 50000 | last)"
  echo "launch A $(limited "$A" 99 launchA "$W/lcc" launches 50000 | last)"
  echo "launch B $(limited "$B" 99 launchB "$W/lcc" launches 50000 | last)"
done >"$W/rates"
small() {  # small TAG [LIB LIMIT]
  local start end
  start=$(python3 -c "import time; print(time.time() + $WARM)")
  end=$(python3 -c "print($start + $WIN)")
  if [ $# -eq 1 ]; then
    START_AT=$start END_AT=$end "${PIN[@]}" python3 "$ROOT/bench/gpu/sm_limit_workload.py" small | last
  else
    START_AT=$start END_AT=$end limited "$2" "$3" "$1" python3 "$ROOT/bench/gpu/sm_limit_workload.py" small | last
  fi
}
for round in $(seq 1 "$ROUNDS"); do
  echo "small native $(small native)"
  for l in 30 70; do
    echo "small A$l $(small "smallA$l" "$A" $l)"
    echo "small B$l $(small "smallB$l" "$B" $l)"
  done
done >>"$W/rates"
for tag in launchA launchB smallA30 smallB30 smallA70 smallB70; do
  grep -h "per launch" "$W/stats-$tag" 2>/dev/null | sed "s/.*pid [0-9]*: /$tag: /" | head -2
  grep -h "limit [0-9]*%:" "$W/stats-$tag" 2>/dev/null | sed "s/.*pid [0-9]* /$tag: /" | head -2
done
python3 - "$W/rates" <<'PYEOF'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    kind, name, value = line.split()
    by.setdefault((kind, name), []).append(float(value))
nat = by.get(("launch", "native"), [])
for name in ("A", "B"):
    v = by.get(("launch", name), [])
    paired = [100 * (n / x - 1) for n, x in zip(nat, v)]
    print("launch rate, limit 99, %s: median %.0f/s (native %.0f/s), median paired overhead %+.1f %%"
          % (name, statistics.median(v), statistics.median(nat), statistics.median(paired)))
snat = by.get(("small", "native"), [])
print("small loop native per round: " + " ".join("%.0f" % x for x in snat))
for l in (30, 70):
    for name in ("A", "B"):
        v = by.get(("small", "%s%d" % (name, l)), [])
        print("small loop limit %d, %s: share %.1f %% of native in total; per round %s" % (
            l, name, 100 * sum(v) / sum(snat[:len(v)]),
            " ".join("%.1f" % (100 * a / b) for a, b in zip(v, snat))))
PYEOF
rm -rf "$W"
