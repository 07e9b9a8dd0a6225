#!/bin/bash
# Call D (2026-11-28): what switching CUPTI on and off costs, for attaching it only while kernel
# records are wanted: bench/gpu/cupti_presence.cu again (attach/detach times per cycle), and its
# `stall` mode (the longest launch an application thread sees while another thread attaches and
# detaches CUPTI).
set -u
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
W=$(mktemp -d /tmp/call28d.XXXXXX)
CUPTI_LIB=""
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64; do
  if ls "$d"/libcupti.so* >/dev/null 2>&1; then [ -z "$CUPTI_LIB" ] && CUPTI_LIB=$d; fi
done
echo "libcupti: $CUPTI_LIB"
nvcc -O2 -std=c++17 -o "$W/cp" "$ROOT/bench/gpu/cupti_presence.cu" -L"$CUPTI_LIB" -lcupti -lcuda ||
  { echo "nvcc failed"; exit 1; }
export LD_LIBRARY_PATH=$CUPTI_LIB:${LD_LIBRARY_PATH:-}
echo "== cupti_presence (pinned to cpu 8)"
taskset -c 8 "$W/cp" 15 40000 | tail -6
echo "== stall (app thread and CUPTI switching on cpus 8-9)"
taskset -c 8,9 "$W/cp" 20 0 stall
