#!/bin/bash
# Real-GPU check of issue 42, item 8 ("usage briefly over the limit while processes exit": 1,377 MiB
# under 1,024 on the fake driver). N streams of processes of ONE container (one region file, one
# limit) each allocate up to the limit in CHUNK-MiB blocks, write them, and exit without freeing,
# over and over for SECONDS; a process without libvgpu samples the memory the driver reports
# (per process, and the device's used memory less its idle baseline) and the region's total, and
# the script prints the largest of each against the limit. The guarantee: none ever exceeds it.
#
# Self-contained: builds libvgpu.so (release, CMake) unless .devbuild/libvgpu.so exists
# (bench/gpu/prepare_devbuild.sh), and its two helpers with gcc (or nvcc). Needs one NVIDIA GPU
# with nothing else running on it (the device's baseline is taken at the start).
# Usage: bash tests/gpu/exit_race.sh
#   env: LIMIT_MIB=4096 CHUNK_MIB=256 STREAMS=4 SECONDS_=20 OUT=/tmp/vgpu-exit-race, VGPU_LIB (a
#   libvgpu.so to use instead). Exit status 0 when every peak is within the limit, 1 when one is
#   over, 2 when the check could not run.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LIMIT_MIB=${LIMIT_MIB:-4096}
CHUNK_MIB=${CHUNK_MIB:-256}
STREAMS=${STREAMS:-4}
DURATION=${SECONDS_:-20}
OUT=${OUT:-/tmp/vgpu-exit-race}
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
W=$(mktemp -d /tmp/vgpu-exit-race.XXXXXX)
mkdir -p "$OUT"
unset LD_PRELOAD CUDA_DEVICE_MEMORY_LIMIT CUDA_DEVICE_MEMORY_SHARED_CACHE

LIB=${VGPU_LIB:-$ROOT/.devbuild/libvgpu.so}
if [ ! -f "$LIB" ]; then
  echo "building libvgpu.so (release)..."
  command -v cmake >/dev/null || { echo "need cmake"; exit 2; }
  cmake --preset release -B "$W/build" -DVGPU_COMPONENTS="libvgpu" >"$OUT/build.log" 2>&1 &&
    cmake --build "$W/build" -j8 --target vgpu_preload >>"$OUT/build.log" 2>&1 ||
    { tail -20 "$OUT/build.log"; exit 2; }
  LIB=$W/build/lib/libvgpu.so
fi
CC=gcc
command -v gcc >/dev/null || CC=nvcc
$CC -O2 -I"$CUDA_INC" -o "$W/worker" "$HERE/exit_race_worker.c" -lcuda &&
  $CC -O2 -I"$ROOT/libvgpu/include" -o "$W/sampler" "$HERE/exit_race_sampler.c" -ldl ||
  { echo "building the helpers failed"; exit 2; }

echo "== $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
echo "== libvgpu $LIB; limit ${LIMIT_MIB} MiB, ${STREAMS} streams of processes, ${CHUNK_MIB} MiB blocks, ${DURATION} s"
REGION=$W/region.cache
"$W/sampler" "$REGION" $((DURATION + 3)) >"$OUT/sampler.txt" 2>&1 &
SAMPLER=$!
sleep 1  # the sampler has its idle baseline

stream() {  # stream INDEX: processes one after the other until the time is up
  local i=$1 end=$((SECONDS + DURATION)) n=0
  while [ $SECONDS -lt $end ]; do
    LD_PRELOAD=$LIB CUDA_DEVICE_MEMORY_SHARED_CACHE=$REGION CUDA_DEVICE_MEMORY_LIMIT=${LIMIT_MIB}m \
      "$W/worker" "$CHUNK_MIB" >>"$OUT/stream$i.log" 2>&1
    n=$((n + 1))
  done
  echo "$n" >"$OUT/stream$i.count"
}
rm -f "$OUT"/stream*.log "$OUT"/stream*.count
for i in $(seq 1 "$STREAMS"); do stream "$i" & done
wait $(jobs -p | grep -v "^$SAMPLER\$")
wait "$SAMPLER"

started=$(cat "$OUT"/stream*.count | awk '{s += $1} END {print s + 0}')
refused_ctx=$(cat "$OUT"/stream*.log | grep -c '^context refused')
errors=$(cat "$OUT"/stream*.log | grep -Evc '^(held |context refused)')
read -r _ procs device region samples < <(sed -n 's/^peak processes=\([0-9]*\) device=\([0-9]*\) region=\([0-9]*\) samples=\([0-9]*\)$/x \1 \2 \3 \4/p' "$OUT/sampler.txt")
if [ -z "${samples:-}" ]; then
  echo "sampler failed: $(cat "$OUT/sampler.txt")"
  exit 2
fi
verdict=OK
for v in "$procs" "$device" "$region"; do [ "$v" -le "$LIMIT_MIB" ] || verdict=OVER; done
[ "$errors" -eq 0 ] || verdict="$verdict (other output: $errors lines, see $OUT/stream*.log)"
printf 'limit %s MiB | peak per-process usage (NVML) %s MiB | device used - idle %s MiB | region %s MiB | %s processes (%s refused a context) | %s samples | %s\n' \
  "$LIMIT_MIB" "$procs" "$device" "$region" "$started" "$refused_ctx" "$samples" "$verdict" |
  tee "$OUT/summary.txt"
rm -rf "$W"
[ "$verdict" = OK ]
