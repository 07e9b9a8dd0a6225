#!/usr/bin/env bash
# Where a limited launch-bound loop loses speed (docs/sm-limit.md, "Known limits"): runs the
# `small` loop of sm_limit_workload.py one configuration at a time on one pinned core, in the same
# run, and prints its time per iteration while running (blocks of 200 launches that held no pause),
# also grouped by the time since the last pause, beside the limiter's own statistics.
#
#   VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bench/gpu/small_speed.sh [CONFIG...]
# CONFIG: native | duty30 | duty70 | preload | limit:<percent>[:<VAR=value>,...] (SO=<path>: that
# build of the library; WORK=small_duty30: the loop pausing itself, with the limiter loaded)
# Default: native duty30 limit:30 limit:99 preload native.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${VGPU_LIBRARY:?set VGPU_LIBRARY to a built libvgpu.so}
WIN=${SPEED_WINDOW:-12}
WARM=${SPEED_WARMUP:-5}
OUT=${OUT:-/tmp/small_speed}
mkdir -p "$OUT" /tmp/vgpulock
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 2); fi
[ $# -gt 0 ] || set -- native duty30 limit:30 limit:99 preload native
i=0
for config in "$@"; do
  start=$(python3 -c "import time; print(time.time() + $WARM)")
  end=$(python3 -c "print($start + $WIN)")
  log="$OUT/$i"
  env_extra=()
  case "$config" in
    native) work=small ;;
    duty30 | duty70) work=small_$config ;;
    preload) work=small; env_extra=(LD_PRELOAD="$LIB") ;;
    limit:*)
      work=small
      IFS=: read -r _ pct extra <<<"$config"
      env_extra=(LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT="$pct" GPU_CORE_UTILIZATION_POLICY=force
                 VGPU_SM_STATS=2 CUDA_DEVICE_MEMORY_SHARED_CACHE="$OUT/$i.cache")
      # SO=<path> runs another build of the library (an A/B of a change in the same run).
      if [ -n "${extra:-}" ]; then
        IFS=, read -r -a more <<<"$extra"
        for kv in "${more[@]}"; do
          case "$kv" in
            SO=*) env_extra[0]="LD_PRELOAD=${kv#SO=}" ;;
            WORK=*) work=${kv#WORK=} ;;
            *) env_extra+=("$kv") ;;
          esac
        done
      fi
      ;;
    *) echo "unknown configuration $config"; exit 2 ;;
  esac
  rm -f /tmp/vgpulock/vgpu-sm-*
  env "${env_extra[@]}" START_AT="$start" END_AT="$end" "${PIN[@]}" python3 \
    "$ROOT/bench/gpu/sm_limit_workload.py" "$work" >"$log.json" 2>"$log.err"
  python3 - "$config" "$log.json" "$log.err" <<'PY'
import json, re, sys
config, js, err = sys.argv[1:]
try:
    r = json.loads(open(js).read().strip().splitlines()[-1])
except Exception as e:
    print(f"{config:24s} failed: {e}; {open(err).read()[-300:]}")
    sys.exit(0)
b = r.get("blocks", {})
after = b.get("us_per_iter_after_pause", {})
stats = open(err).read()
m = re.search(r"launches (\d+), (?:fast \d+, )?events \d+, measured ([\d.]+) ms, charged ([\d.]+) ms, throttled ([\d.]+)", stats)
h = re.search(r"limiter hooks (\d+) ns per launch \(waits excluded\), driver launch (\d+) ns", stats)
extra = ""
if m:
    launches, measured, charged, throttled = int(m[1]), float(m[2]), float(m[3]), float(m[4])
    extra += (f" | limiter: {measured / launches * 1e3:.3f} us measured per launch, charged "
              f"{charged / measured * 100:.1f} % of measured, time share "
              f"{measured / (measured + throttled) * 100:.1f} %")
if h:
    extra += f", hooks {h[1]} ns, driver launch {h[2]} ns"
after_s = " ".join(f"{k}:{v}" for k, v in after.items())
print(f"{config:24s} {r['iters_per_s']:9.0f} it/s  us/iter p50 {b.get('us_per_iter_p50')} "
      f"running {b.get('us_per_iter_running')} pauses {b.get('pauses')} after-pause [{after_s}]{extra}")
PY
  i=$((i + 1))
done
