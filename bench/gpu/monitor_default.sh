#!/usr/bin/env bash
# Real-GPU acceptance of policy `default` driven by the node monitor: a saturating tenant with
# gpucores A_LIMIT alone on the GPU (the monitor marks it alone: limit lifted), then a second
# tenant with B_LIMIT in another container (both marked shared: both limited), next to the same
# loop run natively first. The monitor runs as a plain process (--no-kube) over a hook directory
# laid out like the device plugin's (<dir>/containers/<pod-uid>_<container>/vgpu.cache);
# `vgpu top` reads it. Prints a table (rates as % of native), the flag timeline and `vgpu top`.
#
#   bash bench/gpu/monitor_default.sh          # needs .devbuild (prepare_devbuild.sh with
#                                              # VGPU_DEVBUILD_MONITOR=1) or LIBVGPU/MONITOR/VGPU
# Environment: OUT (default /tmp/vgpu-monitor-default), A_LIMIT (30), B_LIMIT (50), KIND (matmul),
# ALONE_S (s A runs before B starts, 20), SHARED_S (s both run, 20), TICK_MS (monitor tick, 1000).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/vgpu-monitor-default}
LIB=${LIBVGPU:-$ROOT/.devbuild/libvgpu.so}
MONITOR=${MONITOR:-$ROOT/.devbuild/monitor/vgpu-monitor}
VGPU=${VGPU:-$ROOT/.devbuild/monitor/vgpu}
A_LIMIT=${A_LIMIT:-30}
B_LIMIT=${B_LIMIT:-50}
KIND=${KIND:-matmul}
ALONE_S=${ALONE_S:-20}
SHARED_S=${SHARED_S:-20}
TICK_MS=${TICK_MS:-1000}
PY=${PYTHON:-python3}
TENANT=$HERE/rate_tenant.py
PORT=${PORT:-19394}
# The monitor's and vgpu's shared libraries travel in .devbuild/lib; only they get that path
# (PyTorch must keep the image's libstdc++).
DEVLIB=$(dirname "$MONITOR")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
unset LD_PRELOAD CUDA_DEVICE_SM_LIMIT GPU_CORE_UTILIZATION_POLICY CUDA_DEVICE_MEMORY_SHARED_CACHE
for f in "$LIB" "$MONITOR" "$VGPU"; do [ -x "$f" ] || [ -f "$f" ] || { echo "missing $f"; exit 2; }; done
rm -rf "$OUT" && mkdir -p "$OUT/hook/containers/pod-a-uid_main" "$OUT/hook/containers/pod-b-uid_main"
rm -rf /tmp/vgpulock && mkdir -p /tmp/vgpulock && chmod 1777 /tmp/vgpulock
pin() { if command -v taskset >/dev/null && [ "$(nproc)" -ge 8 ]; then echo taskset -c "$1"; fi; }

echo "== native: $KIND alone for 12 s"
$(pin 2) "$PY" "$TENANT" --kind "$KIND" --seconds 12 >"$OUT/native.jsonl" 2>"$OUT/native.err" || {
  cat "$OUT/native.err"; exit 1; }

echo "== monitor (tick $TICK_MS ms) on :$PORT"
LD_LIBRARY_PATH=$DEVLIB $(pin 0) "$MONITOR" --no-kube \
  --vgpu-dir "$OUT/hook" --tick "$TICK_MS" --metrics-bind "127.0.0.1:$PORT" >"$OUT/monitor.log" 2>&1 &
MON=$!
trap 'kill $MON 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done

# The flag timeline: each container's `sharing` every 250 ms from the monitor's snapshot.
(while kill -0 $MON 2>/dev/null; do
   s=$(curl -sf "http://127.0.0.1:$PORT/api/v1/snapshot") &&
     echo "{\"t\": $(date +%s.%N), \"snap\": $s}"
   sleep 0.25
 done) >"$OUT/flags.jsonl" 2>/dev/null &
POLL=$!

tenant() {  # tenant NAME CONTAINER LIMIT SECONDS CORE
  env LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT="$3" GPU_CORE_UTILIZATION_POLICY=default VGPU_SM_STATS=1 \
    CUDA_DEVICE_MEMORY_SHARED_CACHE="$OUT/hook/containers/$2/vgpu.cache" \
    $(pin "$5") "$PY" "$TENANT" --kind "$KIND" --seconds "$4" >"$OUT/$1.jsonl" 2>"$OUT/$1.err"
}
T0=$(date +%s.%N)
tenant a pod-a-uid_main "$A_LIMIT" $((ALONE_S + SHARED_S)) 2 &
A=$!
sleep "$ALONE_S"
TB=$(date +%s.%N)
tenant b pod-b-uid_main "$B_LIMIT" "$SHARED_S" 4 &
B=$!
sleep $((SHARED_S / 2))
LD_LIBRARY_PATH=$DEVLIB "$VGPU" top --url "http://127.0.0.1:$PORT" --once >"$OUT/top.txt" 2>&1
wait $A $B
kill $POLL 2>/dev/null
echo "T0=$T0 TB=$TB" >"$OUT/times.txt"
"$PY" - "$OUT" "$T0" "$TB" "$A_LIMIT" "$B_LIMIT" <<'PY'
import json, statistics, sys
out, t0, tb, la, lb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def series(name):
    try:
        return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.startswith("{")]
    except OSError:
        return []
native = series("native")
nat = statistics.median(r["rate"] for r in native[len(native) // 3:]) if native else float("nan")
flags = []  # (t, {container: sharing})
for l in open(f"{out}/flags.jsonl"):
    try:
        d = json.loads(l)
    except ValueError:
        continue
    m = {c["pod_uid"]: c["sharing"] for g in d["snap"]["gpus"] for c in g["containers"]}
    flags.append((d["t"], m))
def first(pred, after):
    return next((t for t, m in flags if t >= after and pred(m)), None)
t_alone = first(lambda m: m.get("pod-a-uid") == "alone", t0)
t_shared = first(lambda m: m.get("pod-a-uid") == "shared" and m.get("pod-b-uid") == "shared", tb)
a, b = series("a"), series("b")
b_first = min((r["t"] for r in b), default=None)  # B's first interval: its loop is running
def med(rows, lo, hi):
    v = [r["rate"] for r in rows if lo <= r["t"] <= hi]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None
def pct(x):
    return "n/a" if x is None else "%.1f %% [%.1f-%.1f] (n=%d)" % (100 * x[0] / nat, 100 * x[1] / nat, 100 * x[2] / nat, x[3])
print(f"native {nat:.2f} it/s (median of the last 2/3 of 12 s)")
print(f"A marked alone {t_alone - t0:.2f} s after A started" if t_alone else "A never marked alone")
print(f"both marked shared {t_shared - tb:.2f} s after B started"
      + (f" ({t_shared - b_first:+.2f} s from B's first loop interval)" if b_first and t_shared else "")
      if t_shared else "never both shared")
alone = med(a, (t_alone or t0) + 2, tb) 
settle = (t_shared or tb) + 3
ashared, bshared = med(a, settle, tb + 1e9), med(b, settle, tb + 1e9)
print("| phase | tenant | limit | rate, % of native: median [min-max] | check |")
print("|---|---|---|---|---|")
ok = alone and alone[0] >= 0.95 * nat
print(f"| alone (marked alone +2 s .. B starts) | A | {la} | {pct(alone)} | {'PASS' if ok else 'FAIL'} >= 95 |")
for name, lim, x in (("A", la, ashared), ("B", lb, bshared)):
    good = x and abs(100 * x[0] / nat - lim) <= 3
    print(f"| shared (both shared +3 s ..) | {name} | {lim} | {pct(x)} | {'PASS' if good else 'FAIL'} within ±3 of {lim} |")
PY
echo "== vgpu top --once (both tenants running)"
cat "$OUT/top.txt"
echo "== tenants' limiter lines"
grep -h "vgpu" "$OUT/a.err" "$OUT/b.err" | tail -6
echo "== monitor log (last lines)"
tail -5 "$OUT/monitor.log"
