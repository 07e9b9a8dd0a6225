#!/bin/bash
# Call C (2026-11-28): does CUPTI, attached with its kernel records off, cost a launch-bound loop?
# bench/gpu/cupti_presence.cu cycles none / disabled / enabled blocks in one process; then
# bench/gpu/host_costs.c times the limited path's ingredients on this host; the clock source.
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
W=$(mktemp -d /tmp/call28c.XXXXXX)
CUPTI_LIB=""
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 \
  $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
  if ls "$d"/libcupti.so* >/dev/null 2>&1; then [ -z "$CUPTI_LIB" ] && CUPTI_LIB=$d; fi
done
echo "libcupti: $CUPTI_LIB"
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nvcc -O2 -std=c++17 -o "$W/cp" "$ROOT/bench/gpu/cupti_presence.cu" -L"$CUPTI_LIB" -lcupti -lcuda ||
  { echo "nvcc failed"; exit 1; }
gcc -O2 -I/usr/local/cuda/include "$ROOT/bench/gpu/host_costs.c" -L/usr/local/cuda/lib64/stubs \
  -lcuda -lpthread -o "$W/hc" || echo "host_costs build failed"
export LD_LIBRARY_PATH=$CUPTI_LIB:${LD_LIBRARY_PATH:-}
for run in 1 2; do
  echo "== cupti_presence run $run (pinned to cpu 8)"
  taskset -c 8 "$W/cp" 15 40000
done
echo "== host_costs (pinned to cpu 8)"
[ -x "$W/hc" ] && taskset -c 8 "$W/hc"
