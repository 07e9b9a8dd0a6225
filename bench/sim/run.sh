#!/usr/bin/env bash
# Scale benchmark of `vgpu sim`: 5,000 simulated nodes x 8 GPUs (release build), reporting
# pods/s through the whole simulated cluster and the extender's filter/prioritize/bind latency as
# the scheduling loop measures it over HTTP. Usage: bench/sim/run.sh [nodes] [pods] [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
NODES=${1:-5000}
PODS=${2:-20000}
BUILD=${3:-build/release-sim}
if [[ ! -x "$BUILD/cli/vgpu" ]]; then
  # Subfolders are selected by their own names (cmake/VgpuCommon.cmake): every one of core/ and
  # sim/, then what the simulated cluster runs (net, kube, the two daemons) and the CLI.
  components="core;net;kube;deviceplugin;scheduler;sim;cli"
  for d in core/*/ sim/*/; do components+=";$(basename "$d")"; done
  cmake --preset release -B "$BUILD" -DVGPU_COMPONENTS="$components" >/dev/null
  cmake --build "$BUILD" -j "$(nproc)" --target vgpu
fi
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
/usr/bin/time -f "peak RSS %M KiB, %e s elapsed" \
  "$BUILD/cli/vgpu" sim --nodes "$NODES" --gpus-per-node 8 --pods "$PODS" --json --no-progress >"$OUT"
python3 - "$OUT" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for run in doc["runs"]:
    t, p = run["timing"], run["pods"]
    print(f'{doc["scenario"]} [{run["policy"]["node"]}/{run["policy"]["gpu"]}]: '
          f'{p["placed"]} placed, {p["pending"]} pending, {p["completed"]} completed; '
          f'{t["pods_per_s"]:.0f} pods/s over {t["wall_s"]:.1f} s; '
          f'{t["api_requests"] / max(p["placed"], 1):.1f} API server requests per placed pod')
    for k in ("admit", "filter", "prioritize", "bind", "schedule", "preempt"):
        if t[k]["count"] == 0:
            continue
        print(f'  {k:10s} p50 {t[k]["p50_ms"]:.2f} ms  p99 {t[k]["p99_ms"]:.2f} ms  max {t[k]["max_ms"]:.2f} ms'
              f'  ({t[k]["count"]})')
    print("  invariants:", "OK" if run["invariants"]["ok"] else run["invariants"]["violations"][:5])
PY
