#!/usr/bin/env bash
# What vgpu-monitor costs a node: N containers (default 64), each a directory under a fresh
# --vgpu-dir holding the region of one live process that runs libvgpu.so against the fake driver
# and holds a context and 2 MiB; the monitor ticks every second (its default) without Kubernetes.
# Prints the monitor's CPU (percent of one core over the window) and memory (RSS, of which
# file-backed: the mapped regions) after a warm-up.
#
#   bench/monitor/overhead.sh [BUILD_DIR (default build/release)] [N] [SECONDS]
set -euo pipefail
set -m  # each background pipeline in its own process group: cleanup ends the sleeps too
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build/release}" && pwd)
n=${2:-64}
window=${3:-30}
monitor=$build/monitor/vgpu-monitor
probe=$build/tests/libvgpu/support/libvgpu_probe
lib=$build/lib/libvgpu.so
fakes=$build/testing/fakes/lib
for f in "$monitor" "$probe" "$lib"; do
  [[ -e $f ]] || {
    echo "overhead.sh: $f missing: build vgpu-monitor libvgpu_probe vgpu_preload in $build" >&2
    exit 2
  }
done
work=$(mktemp -d /tmp/vgpu-monitor-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export VGPU_FAKE_STATE_DIR=$work/fake VGPU_FAKE_GPUS=2
mkdir -p "$VGPU_FAKE_STATE_DIR" "$work/vgpu/containers"
for i in $(seq 1 "$n"); do
  dir=$work/vgpu/containers/pod-$i-uid_main
  mkdir -p "$dir"
  # stdin from a sleeping pipe: the probe holds until it closes.
  (sleep 100000 | LD_PRELOAD=$lib LD_LIBRARY_PATH=$fakes CUDA_DEVICE_MEMORY_LIMIT_0=1g \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=$dir/region.cache "$probe" hold >/dev/null) &
  pids+=($!)
done
sleep 3
LD_LIBRARY_PATH=$fakes "$monitor" --no-kube --node-name bench --vgpu-dir "$work/vgpu" \
  --metrics-bind 127.0.0.1:0 --nvml-library "$fakes/libnvidia-ml.so.1" 2>"$work/monitor.log" &
mon=$!
pids+=("$mon")
sleep 5  # warm-up: every region found and mapped
ticks=$(getconf CLK_TCK)
cpu_of() { awk '{print $14 + $15}' "/proc/$mon/stat"; }
c0=$(cpu_of)
t0=$(date +%s.%N)
sleep "$window"
c1=$(cpu_of)
t1=$(date +%s.%N)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$mon/status")
file=$(awk '/^RssFile/ {print $2}' "/proc/$mon/status")
anon=$(awk '/^RssAnon/ {print $2}' "/proc/$mon/status")
problems=$(grep -c . "$work/monitor.log" || true)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" -v n="$n" -v rss="$rss" \
  -v file="$file" -v anon="$anon" 'BEGIN {
    printf "containers %d, window %.0f s: cpu %.2f %% of one core; rss %.1f MiB (anon %.1f, file %.1f)\n",
      n, t1 - t0, 100 * (c1 - c0) / hz / (t1 - t0), rss / 1024, anon / 1024, file / 1024 }'
echo "monitor log lines: $problems"
sed -n 1,3p "$work/monitor.log"
