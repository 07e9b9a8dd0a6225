#!/usr/bin/env bash
# What vgpu-monitor costs a node: N containers (default 64), each a directory under a fresh
# --vgpu-dir holding the region of one live process that runs libvgpu.so against the fake driver
# and holds a context and 2 MiB; the monitor ticks every second (its default) without Kubernetes.
# Prints, over a window after a warm-up, the monitor's CPU (percent of one core), its mean tick
# duration (vgpu_monitor_tick_duration_seconds, when the binary exports it) and its memory: RSS,
# split into private anonymous memory, the pages of the mapped regions (page cache shared with the
# containers) and other file pages (the binary, its libraries, the fake NVML's state file).
#
#   bench/monitor/overhead.sh [BUILD_DIR (default build/release)] [N] [SECONDS]
#
# NVML=none runs the monitor without NVML (--nvml-library ""): the fake NVML reads /proc/<pid>/stat
# of every context owner on most calls, a cost of the fake, not of the monitor or a real driver.
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
nvml_library=$fakes/libnvidia-ml.so.1
[[ ${NVML:-fake} == none ]] && nvml_library=""
LD_LIBRARY_PATH=$fakes "$monitor" --no-kube --node-name bench --vgpu-dir "$work/vgpu" \
  --metrics-bind 127.0.0.1:0 --nvml-library "$nvml_library" 2>"$work/monitor.log" &
mon=$!
pids+=("$mon")
sleep 5  # warm-up: every region found and mapped
ticks=$(getconf CLK_TCK)
port=$(sed -n 's/.*msg=listening address=127.0.0.1:\([0-9]*\).*/\1/p' "$work/monitor.log" | head -1)
# "sum count" of the tick-duration histogram; "0 0" when the binary does not export it.
tick_hist() {
  curl -s --max-time 5 "http://127.0.0.1:$port/metrics" 2>/dev/null |
    awk '/^vgpu_monitor_tick_duration_seconds_sum/ {s = $2} /^vgpu_monitor_tick_duration_seconds_count/ {c = $2}
         END {print s + 0, c + 0}' || echo "0 0"
}
cpu_of() { awk '{print $14 + $15}' "/proc/$mon/stat"; }
h0=$(tick_hist)
c0=$(cpu_of)
t0=$(date +%s.%N)
sleep "$window"
c1=$(cpu_of)
t1=$(date +%s.%N)
h1=$(tick_hist)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$mon/status")
anon=$(awk '/^RssAnon/ {print $2}' "/proc/$mon/status")
# Resident pages of the region mappings (*.cache) and of the other file mappings, from smaps.
read -r regions otherfile < <(awk '
  /^[0-9a-f]+-[0-9a-f]+ / {name = $6; file = ($5 != 0)}
  /^Rss:/ { if (name ~ /\.cache$/) r += $2; else if (file) o += $2 }
  END {print r + 0, o + 0}' "/proc/$mon/smaps")
problems=$(grep -c . "$work/monitor.log" || true)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" -v n="$n" -v rss="$rss" \
  -v nvml="${NVML:-fake}" -v anon="$anon" -v regions="$regions" -v other="$otherfile" -v h0="$h0" -v h1="$h1" 'BEGIN {
    split(h0, a, " "); split(h1, b, " ")
    tick = (b[2] > a[2]) ? sprintf("%.2f ms", 1000 * (b[1] - a[1]) / (b[2] - a[2])) : "n/a"
    printf "containers %d, nvml %s, window %.0f s: cpu %.2f %% of one core; tick %s (mean); rss %.1f MiB: private %.1f, regions %.1f, other file %.1f\n",
      n, nvml, t1 - t0, 100 * (c1 - c0) / hz / (t1 - t0), tick, rss / 1024, anon / 1024, regions / 1024, other / 1024 }'
echo "monitor log lines: $problems"
sed -n 1,3p "$work/monitor.log"
