#!/bin/bash
# Measures what the SM limiter's kernel records rest on (bench/gpu/cupti_probe.cu): CUPTI's cost per
# launch, flush cost and latency, clock alignment, and how time-sliced tenants' records overlap
# (bench/gpu/cupti_overlap.py). Needs a GPU, nvcc and libcupti. Output: tables on stdout.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/cupti-probe.XXXXXX)
CUPTI_LIB=""
for d in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 \
  $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
  if ls "$d"/libcupti.so* >/dev/null 2>&1; then
    echo "libcupti in $d: $(ls "$d"/libcupti.so* | xargs -n1 basename | tr '\n' ' ')"
    [ -z "$CUPTI_LIB" ] && CUPTI_LIB=$d
  fi
done
[ -n "$CUPTI_LIB" ] || { echo "no libcupti found"; exit 1; }
nvcc -O2 -std=c++17 -o "$W/probe" "$HERE/cupti_probe.cu" -L"$CUPTI_LIB" -lcupti -lcuda ||
  { echo "nvcc failed"; exit 1; }
export LD_LIBRARY_PATH=$CUPTI_LIB:${LD_LIBRARY_PATH:-}
P=$W/probe

echo "== launch overhead (empty kernels, 200k launches, rounds interleaved)"
for round in 1 2 3; do
  for mode in plain cupti flush1 flush5 period; do "$P" overhead 200000 $mode; done
done

echo "== tenants (kernel records of two processes time-sliced on one GPU)"
BIG="1056 200000 0 0"    # saturating: a full wave of long kernels, never synchronising
SMALL="132 3000 10 0"    # launch-bound: short kernels, 10 us of host time between launches
BURST="1056 8000 300 8"  # host-bound bursts: 8 medium kernels, then a sync, 300 us host gaps
run_pair() {  # NAME CONFIG_A CONFIG_B
  local name=$1 a=$2 b=$3
  "$P" tenant $a 3 "$W/$name.soloA" && "$P" tenant $b 3 "$W/$name.soloB" || return
  "$P" tenant $a 5 "$W/$name.A" &
  "$P" tenant $b 5 "$W/$name.B" &
  wait
  echo "-- $name"
  python3 "$HERE/cupti_overlap.py" "$W/$name.soloA" "$W/$name.soloB" "$W/$name.A" "$W/$name.B"
}
run_pair big_big "$BIG" "$BIG"
run_pair big_small "$BIG" "$SMALL"
run_pair big_burst "$BIG" "$BURST"
run_pair burst_small "$BURST" "$SMALL"
run_pair burst_burst "$BURST" "$BURST"
rm -rf "$W"
