#!/usr/bin/env bash
# The vgpu-scheduler binary's extender listener under bad clients and load (docs/reliability.md,
# "HTTP endpoints under load and bad clients"): builds vgpu-scheduler and http_endpoint_stress
# (Release, only the components they need) and runs the stress tool, which prints /healthz latency
# per scenario and what oversized bodies get.
#
#   bench/http/endpoint_stress.sh [BUILD_DIR (default build/http-bench)] [TOOL FLAGS...]
#
# TOOL FLAGS: --scheduler PATH (another binary, e.g. an older build to compare), --connections
# 1000, --window-s 10, --nodes 50, --flood-clients 4, --flood-mib 80, --filter-clients 4, --only
# NAME (the scenarios whose name contains NAME: "idle", "slow-loris", "flood", "filter", "all").
# The tool and the scheduler each hold about 2 x --connections descriptors: the script raises the
# soft limit to the hard one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$repo/build/http-bench}
[[ $# -gt 0 ]] && shift
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DVGPU_COMPONENTS="core;base;codec;prom;sched;config;allocate;net;kube;scheduler;sim;apiserver;bench;http" \
    >/dev/null
fi
cmake --build "$build" --target vgpu-scheduler http_endpoint_stress -j"$(nproc)"
ulimit -n "$(ulimit -Hn)"
scheduler=$build/scheduler/vgpu-scheduler
for a in "$@"; do [[ $a == --scheduler ]] && scheduler=""; done
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); commit $(git -C "$repo" rev-parse --short HEAD)"
exec "$build/bench/http/http_endpoint_stress" ${scheduler:+--scheduler "$scheduler"} "$@"
