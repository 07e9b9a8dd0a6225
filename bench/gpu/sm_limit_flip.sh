#!/usr/bin/env bash
# The launch-bound loop's share at limits 10/30/50/70, each measured inside one process against
# phases of the same process with the limit lifted (bench/gpu/sm_limit_flip.py: the node monitor's
# flag, driven the way the monitor would, under GPU_CORE_UTILIZATION_POLICY=default), so that the
# host's drift between processes and minutes drops out. Part `lifted` measures what the reference
# phases pay for libvgpu with the limit lifted: the in-process paired launch probe
# (libvgpu/tests_support/paired_launch.c) in a container whose flag says "alone".
#
#   VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bench/gpu/sm_limit_flip.sh
# Part `cycles` interleaves finely (the host's speed wanders by 10-15 % over seconds, see
# bench/gpu/host_drift.sh): limited phases of whole cycles of the limiter's rhythm between lifted
# phases of 0.5 s, 20 s of limited time per limit, plus a control run with the limit lifted
# throughout (sm_limit_flip.py cycles); part `shares` alternates 6 s / 12 s phases.
# Environment: FLIP_LIMITS (default "10 30 50 70"), FLIP_PARTS (default "cycles lifted"), and
# sm_limit_flip.py's FLIP_NATIVE_S, FLIP_LIMITED_S, FLIP_ROUNDS, FLIP_WARMUP_S, FLIP_CYCLES,
# FLIP_LIMITED_TOTAL_S.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${VGPU_LIBRARY:?set VGPU_LIBRARY to a built libvgpu.so}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
gcc -O2 -I"$ROOT/libvgpu/include" -o "$W/offsets" "$ROOT/bench/gpu/region_offsets.c" || exit 1
OFFSETS=$("$W/offsets")
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ]; then PIN=(taskset -c 2); fi
mkdir -p /tmp/vgpulock

set_flag() {  # set_flag REGION VALUE: what the node monitor writes (2 alone, 1 shared)
  FLIP_OFFSETS="$OFFSETS" python3 "$ROOT/bench/gpu/sm_limit_flip.py" set-flag "$1" "$2"
}

run_loop() {  # run_loop NAME PERCENT CONTROL [cycles]: the loop in one preloaded process
  rm -f /tmp/vgpulock/vgpu-sm-*
  LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT="$2" GPU_CORE_UTILIZATION_POLICY=default \
    VGPU_SM_STATS=1 CUDA_DEVICE_MEMORY_SHARED_CACHE="$W/region$1" FLIP_OFFSETS="$OFFSETS" \
    FLIP_CONTROL="$3" "${PIN[@]}" python3 "$ROOT/bench/gpu/sm_limit_flip.py" ${4:-} \
    >"$W/$1.json" 2>"$W/$1.err"
}

for part in ${FLIP_PARTS:-cycles lifted}; do
  case $part in
    shares)
      echo "limit  share %  per limited phase          native it/s (phases)        pauses  limiter"
      for limit in ${FLIP_LIMITS:-10 30 50 70}; do
        run_loop "$limit" "$limit" 0
        python3 "$ROOT/bench/gpu/sm_limit_flip.py" report shares "$limit" "$W/$limit.json" "$W/$limit.err"
      done
      ;;
    cycles)
      # Limited phases of whole cycles of the limiter's rhythm between 0.5 s lifted ones
      # (sm_limit_flip.py cycles); `control` keeps the limit lifted throughout: the method's noise.
      echo "limit    share %  (flank mean)  limited s  phases  per phase min/median/max  phase s  wait ms  native it/s"
      for limit in control ${FLIP_LIMITS:-10 30 50 70}; do
        if [ "$limit" = control ]; then run_loop ccontrol 30 1 cycles; else run_loop "c$limit" "$limit" 0 cycles; fi
        python3 "$ROOT/bench/gpu/sm_limit_flip.py" report cycles "$limit" "$W/c$limit.json" "$W/c$limit.err"
        [ -n "${OUT:-}" ] && cp "$W/c$limit.json" "$W/c$limit.err" "$OUT/" 2>/dev/null
      done
      ;;
    lifted)
      gcc -O2 -std=gnu11 -I"${CUDA_HOME:-/usr/local/cuda}/include" -o "$W/paired" \
        "$ROOT/libvgpu/tests_support/paired_launch.c" -lcuda -ldl || exit 1
      run_paired() {
        LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT=30 GPU_CORE_UTILIZATION_POLICY=default \
          CUDA_DEVICE_MEMORY_SHARED_CACHE="$W/lifted" "${PIN[@]}" "$W/paired" 2000 "$1" | tail -1
      }
      rm -f /tmp/vgpulock/vgpu-sm-*
      run_paired 5 >/dev/null  # creates the region and its device record
      set_flag "$W/lifted" 2
      for round in 1 2 3; do
        echo "lifted (policy default, flag alone) round $round: $(run_paired 300)"
      done
      ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
