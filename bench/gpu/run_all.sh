#!/bin/bash
# Real-GPU checks of libvgpu.so and `vgpu run` (needs an NVIDIA GPU, nvcc, python3 with torch,
# cupy, jax and pynvml). Prints a table; logs and the summary go to $OUT (default /tmp/vgpu-gpu).
#
# Uses prebuilt .devbuild/libvgpu.so and .devbuild/vgpu when present (built on the development
# machine by bench/gpu/prepare_devbuild.sh); otherwise builds them with CMake (release preset).
# Usage: bench/gpu/run_all.sh [--quick]   (--quick: 3 benchmark repetitions instead of 7)
# VGPU_RUN_EXTRA: more `vgpu run` options for every check, e.g. "--mode mps --mps-pipe DIR" (the
# memory checks in MPS mode); CHECKS_ONLY=1: the checks without the launch/malloc benchmark.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/vgpu-gpu}
LIMIT_MIB=4096
REPS=9
[ "${1:-}" = "--quick" ] && REPS=3
W=$(mktemp -d /tmp/vgpu-gpu-work.XXXXXX)
LOG=$W/logs
mkdir -p "$OUT" "$LOG"
unset LD_PRELOAD CUDA_DEVICE_MEMORY_LIMIT CUDA_DEVICE_MEMORY_SHARED_CACHE
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

LIB=$ROOT/.devbuild/libvgpu.so
VGPU=$ROOT/.devbuild/vgpu
if [ ! -x "$VGPU" ] || [ ! -f "$LIB" ]; then
  echo "building libvgpu + vgpu (release)..."
  command -v cmake >/dev/null && command -v g++ >/dev/null || { echo "need cmake and g++"; exit 1; }
  cmake --preset release -B "$W/build" -DVGPU_COMPONENTS="libvgpu;cli;core;base" >"$LOG/build.log" 2>&1 &&
    cmake --build "$W/build" -j8 --target vgpu_preload vgpu >>"$LOG/build.log" 2>&1 ||
    { tail -20 "$LOG/build.log"; exit 1; }
  LIB=$W/build/lib/libvgpu.so
  VGPU=$W/build/cli/vgpu
fi
export VGPU_LIBRARY=$LIB

echo "== environment"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$LOG/gpu.txt"
PHYS_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1 | tr -d ' ')
"$VGPU" version | head -1

echo "== building test programs"
nvcc -O2 -o "$W/cuda_runtime_limit" "$HERE/cuda_runtime_limit.cu" &&
  nvcc -O2 -o "$W/cuda_driver_limit" "$HERE/cuda_driver_limit.c" -lcuda &&
  nvcc -O2 -o "$W/bench" "$ROOT/bench/libvgpu/launch_malloc_bench.cu" ||
  { echo "nvcc failed"; exit 1; }

python3 "$HERE/nvml_monitor.py" "$W/peaks.txt" &
MON=$!
sleep 1

vrun() {  # vrun NAME vgpu-run-options... -- CMD...
  local name=$1
  shift
  # shellcheck disable=SC2086 # VGPU_RUN_EXTRA is a list of options
  timeout 120 "$VGPU" run ${VGPU_RUN_EXTRA:-} "$@" >"$LOG/$name.log" 2>&1
  echo "exit=$?" >>"$LOG/$name.log"
}

echo "== checks under a ${LIMIT_MIB} MiB limit"
vrun nvidia_smi --gpumem $LIMIT_MIB -- nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader,nounits
vrun nvidia_smi_full --gpumem $LIMIT_MIB -- nvidia-smi
vrun driver --gpumem $LIMIT_MIB -- "$W/cuda_driver_limit" 256 2
vrun runtime --gpumem $LIMIT_MIB -- "$W/cuda_runtime_limit" 256
vrun runtime_unlimited -- "$W/cuda_runtime_limit" 256 props
"$W/cuda_runtime_limit" 256 props >"$LOG/runtime_native.log" 2>&1
vrun torch_default --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" torch
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True vrun torch_expandable --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" torch
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync vrun torch_async --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" torch
vrun cupy --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" cupy
vrun jax --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" jax

echo "== two processes, one ${LIMIT_MIB} MiB region, 3 GiB each"
"$VGPU" run ${VGPU_RUN_EXTRA:-} --region "$W/shared.cache" --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" hold3g >"$LOG/two_a.log" 2>&1 &
A=$!
for _ in $(seq 1 100); do grep -q hold3g "$LOG/two_a.log" 2>/dev/null && break; sleep 0.2; done
"$VGPU" run ${VGPU_RUN_EXTRA:-} --region "$W/shared.cache" --gpumem $LIMIT_MIB -- python3 "$HERE/frameworks.py" hold3g >"$LOG/two_b.log" 2>&1
wait $A

# The NVML poller would perturb the timings: stop it before the benchmark.
kill -TERM $MON
wait $MON 2>/dev/null

echo "== benchmark (median of $REPS, interleaved native / vgpu run --gpumem $LIMIT_MIB, pinned to one core)"
: >"$LOG/bench.txt"
PIN=()
command -v taskset >/dev/null && PIN=(taskset -c "$(($(nproc) - 1))")
[ "${CHECKS_ONLY:-0}" = 1 ] && REPS=0
for i in $(seq 1 "$REPS"); do
  for mode in launch malloc; do
    echo "native $("${PIN[@]}" "$W/bench" $mode)" >>"$LOG/bench.txt"
    echo "vgpu $("${PIN[@]}" "$VGPU" run --gpumem $LIMIT_MIB -- "$W/bench" $mode)" >>"$LOG/bench.txt"
  done
done

python3 - "$LOG" "$W/peaks.txt" "$LIMIT_MIB" "$PHYS_MIB" <<'PY' | tee "$OUT/summary.txt"
import os, re, statistics, sys
log, peaks_file, limit, phys = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
peaks = {}
if os.path.exists(peaks_file):
    for line in open(peaks_file):
        pid, mib = line.split()
        peaks[int(pid)] = int(mib)
def kv(name):
    d = {}
    p = os.path.join(log, name + ".log")
    if os.path.exists(p):
        for line in open(p):
            m = re.match(r"^([a-z_0-9]+)=(.*)$", line.strip())
            if m: d[m.group(1)] = m.group(2)
    return d
rows, fails = [], 0
def row(check, ok, detail):
    global fails
    fails += 0 if ok else 1
    rows.append(("PASS" if ok else "FAIL", check, detail))
def peak_of(d):
    return peaks.get(int(d.get("pid", "0")), -1)
# vgpu run's own notes (e.g. "started an MPS control daemon") come before nvidia-smi's line.
smi_lines = open(os.path.join(log, "nvidia_smi.log")).read().splitlines() if os.path.exists(os.path.join(log, "nvidia_smi.log")) else []
smi = next((l for l in smi_lines if not l.startswith("vgpu run:")), "")
row("nvidia-smi under vgpu run shows the limit", smi.split(",")[0].strip() == str(limit), "memory.total,used = " + smi)
d = kv("driver")
ok = (d.get("meminfo_total_mib") == str(limit) and d.get("device_total_mib") == str(limit)
      and d.get("alloc_last_error") == "2" and d.get("managed_error") == "2" and d.get("async_error") == "2"
      and d.get("vmm_error") == "2" and d.get("realloc_blocks") == d.get("alloc_blocks") and 0 <= peak_of(d) <= limit)
row("driver API: cuMemAlloc/Managed/Async/cuMemCreate stop with OOM(2)", ok,
    "total %s, %s MiB in 256 MiB blocks, errors %s/%s/%s/%s, realloc %s/%s, host peak %d MiB" % (
        d.get("meminfo_total_mib"), d.get("alloc_mib"), d.get("alloc_last_error"), d.get("managed_error"),
        d.get("async_error"), d.get("vmm_error"), d.get("realloc_blocks"), d.get("alloc_blocks"), peak_of(d)))
d = kv("runtime")
ok = (d.get("props_total_mib") == str(limit) and d.get("meminfo_total_mib") == str(limit)
      and d.get("malloc_error") == "cudaErrorMemoryAllocation" and d.get("realloc_blocks") == d.get("malloc_blocks"))
row("runtime API: cudaMalloc stops with cudaErrorMemoryAllocation", ok,
    "props %s MiB, meminfo %s MiB, %s MiB, %s, realloc %s/%s" % (d.get("props_total_mib"), d.get("meminfo_total_mib"),
    d.get("malloc_mib"), d.get("malloc_error"), d.get("realloc_blocks"), d.get("malloc_blocks")))
d, native = kv("runtime_unlimited"), kv("runtime_native")
row("unlimited: cudaGetDeviceProperties total = physical",
    d.get("props_total_mib") is not None and d.get("props_total_mib") == native.get("props_total_mib"),
    "props %s MiB under vgpu run, %s MiB native (nvidia-smi: %d MiB)" % (
        d.get("props_total_mib"), native.get("props_total_mib"), phys))
for name in ["torch_default", "torch_expandable", "torch_async", "cupy", "jax"]:
    d = kv(name)
    total_ok = d.get("framework_total_mib") == str(limit) if not name.startswith("jax") else True
    ok = (total_ok and "OutOfMemoryError" in d.get("error", "") or "RESOURCE_EXHAUSTED" in d.get("error", "")) \
        and d.get("realloc_blocks") == d.get("blocks") and int(d.get("blocks", "0")) > 0 and 0 <= peak_of(d) <= limit \
        and total_ok
    row(name, ok, "total %s MiB%s, %s MiB then %s, realloc %s/%s, host peak %d MiB" % (
        d.get("framework_total_mib"), " (jax bytes_limit %s)" % d.get("jax_bytes_limit_mib") if name == "jax" else "",
        d.get("alloc_mib"), d.get("error"), d.get("realloc_blocks"), d.get("blocks"), peak_of(d)))
a, b = kv("two_a"), kv("two_b")
row("two processes, one 4 GiB region: both cannot hold 3 GiB", a.get("hold3g") == "ok" and b.get("hold3g") == "oom",
    "first %s, second %s" % (a.get("hold3g"), b.get("hold3g")))
bench = {}
p = os.path.join(log, "bench.txt")
if os.path.exists(p):
    for line in open(p):
        parts = line.split()
        if len(parts) == 3:
            bench.setdefault((parts[0], parts[1]), []).append(float(parts[2]))
for mode, unit in [("launch", "launches/s"), ("malloc", "1 MiB malloc+free pairs/s")]:
    n, v = bench.get(("native", mode), []), bench.get(("vgpu", mode), [])
    if n and v and len(n) == len(v):
        mn, mv = statistics.median(n), statistics.median(v)
        # Runs alternate native/vgpu, so pairing them cancels the GPU's drift between runs.
        paired = statistics.median([(a - b) / a * 100 for a, b in zip(n, v)])
        row("overhead %s <= 2%%" % mode, paired <= 2.0,
            "native %.0f, vgpu %.0f %s (medians of %d); median paired overhead %.2f%%, spread of native runs %.1f%%" % (
                mn, mv, unit, len(n), paired, (max(n) - min(n)) / mn * 100))
    elif os.environ.get("CHECKS_ONLY") == "1":
        print("SKIP  overhead %s (CHECKS_ONLY=1)" % mode)
    else:
        row("overhead " + mode, False, "no data")
w = max(len(r[1]) for r in rows)
for status, check, detail in rows:
    print("%-4s  %-*s  %s" % (status, w, check, detail))
print("%d passed, %d failed" % (len(rows) - fails, fails))
PY
cp "$W/peaks.txt" "$LOG/" 2>/dev/null
tar -C "$W" -czf "$OUT/logs.tar.gz" logs
rm -rf "$W"
