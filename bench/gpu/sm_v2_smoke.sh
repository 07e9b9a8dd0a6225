#!/usr/bin/env bash
# A quick real-GPU check of the SM limiter (a few minutes): what CUPTI's kernel kind costs to turn
# on and off, how late records arrive for saturating and bursty loops, the matmul scenarios of
# sm_limit_bench.sh with short windows, and the launch-bound loop at 50 beside its native run.
# Needs .devbuild/libvgpu.so (or VGPU_LIBRARY). Output: tables and the limiter's stats lines.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/sm-v2-smoke}
mkdir -p "$OUT"
export VGPU_LIBRARY=${VGPU_LIBRARY:-$ROOT/.devbuild/libvgpu.so}
export PYTHONUNBUFFERED=1
PARTS=${PARTS:-cupti matmul small}
part() { [[ " $PARTS " == *" $1 "* ]]; }
if part cupti; then
  CUPTI_LIB=/usr/local/cuda/lib64
  nvcc -O2 -std=c++17 -o /tmp/cupti_probe "$ROOT/bench/gpu/cupti_probe.cu" -L"$CUPTI_LIB" -lcupti -lcuda &&
    export LD_LIBRARY_PATH=$CUPTI_LIB:${LD_LIBRARY_PATH:-} &&
    /tmp/cupti_probe toggle 4 &&
    /tmp/cupti_probe tenant 1056 200000 0 0 3 /tmp/big.rec &&
    /tmp/cupti_probe tenant 1056 200000 0 4 3 /tmp/big4.rec &&
    /tmp/cupti_probe tenant 1056 8000 300 8 3 /tmp/burst.rec &&
    /tmp/cupti_probe tenant 132 3000 10 0 3 /tmp/small.rec
fi
if part matmul; then
  SM_BENCH_PARTS=matmul SM_BENCH_WINDOW=${WIN:-10} SM_BENCH_WARMUP=5 OUT=$OUT/matmul \
    bash "$ROOT/bench/gpu/sm_limit_bench.sh" 2>&1 | grep -v "done:"
  grep -h "vgpu sm-limit" "$OUT"/matmul/*.err | cut -c1-300 | sort | uniq -c | sort -rn | head -20
fi
if part small; then
  W="$ROOT/bench/gpu/sm_limit_workload.py"
  for l in native 50 native 30 native; do
    s=$(python3 -c "import time; print(time.time() + 4)"); e=$(python3 -c "print($s + 8)")
    if [ $l = native ]; then
      START_AT=$s END_AT=$e taskset -c 3 python3 "$W" small >"$OUT/small_$l.json" 2>"$OUT/small_$l.err"
    else
      LD_PRELOAD=$VGPU_LIBRARY CUDA_DEVICE_SM_LIMIT=$l GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1 \
        CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/smoke-small.cache START_AT=$s END_AT=$e taskset -c 3 \
        python3 "$W" small >"$OUT/small_$l.json" 2>"$OUT/small_$l.err"
    fi
    echo "small $l: $(python3 -c "import json,sys; d=json.loads(open('$OUT/small_$l.json').read().strip().splitlines()[-1]); print(round(d['iters_per_s']))" 2>&1) iters/s $(grep -h 'vgpu sm-limit' "$OUT/small_$l.err" | cut -c1-260)"
  done
fi
