#!/bin/bash
# Issue 18: where a training tenant limited to gpucores 50 loses its speed (acceptance 2 failed
# there with waits=0). The training loop of sm_workloads.py alone, pinned to one core as in
# sm_v2_bench.sh, in ROUNDS rounds (default 2, order rotated) of: native; libvgpu at 50 and 90;
# CUPTI alone (cupti_states_shim.c preloaded: records as libvgpu's records mode takes them, no
# libvgpu) with 4-KB and 64-KB buffers. Each process's threads are read by thread_cpu.py over the window (CPU,
# run-queue wait, slices per thread), and the limited ones' stats lines are kept.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29l.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
WARM=${WARM:-14} WIN=${WIN:-10} ROUNDS=${ROUNDS:-2}
read -r -a VARIANTS <<<"${VARIANTS:-native l50 l90 cupti4 cupti64}"
LIB=$PWD/.devbuild/libvgpu.so
RAW=$OUT/raw
mkdir -p "$RAW" /tmp/vgpu-bench
gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o /tmp/cupti_shim.so \
  bench/gpu/cupti_states_shim.c -L/usr/local/cuda/lib64 -lcupti -lpthread || exit 1
unset LD_PRELOAD CUDA_DEVICE_SM_LIMIT GPU_CORE_UTILIZATION_POLICY CUDA_DEVICE_MEMORY_SHARED_CACHE
export PYTHONUNBUFFERED=1
run_one() {  # run_one VARIANT ROUND
  local v=$1 r=$2 envs=() now start end pid
  case $v in
    native) ;;
    l[0-9]*) envs=(LD_PRELOAD="$LIB" CUDA_DEVICE_MEMORY_SHARED_CACHE="/tmp/vgpu-bench/$v.$r.cache"
                   CUDA_DEVICE_SM_LIMIT="${v#l}" GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1) ;;
    cupti*) envs=(LD_PRELOAD=/tmp/cupti_shim.so CUPTI_SHIM_PRELOAD=1 CUPTI_SHIM_BUF_KB="${v#cupti}"
                  LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
  esac
  rm -rf /tmp/vgpulock && mkdir -p /tmp/vgpulock && chmod 1777 /tmp/vgpulock
  now=$(date +%s.%N)
  start=$(awk -v n="$now" -v w="$WARM" 'BEGIN { printf "%.3f", n + w }')
  end=$(awk -v s="$start" -v w="$WIN" 'BEGIN { printf "%.3f", s + w }')
  taskset -c 2 env START_AT="$start" END_AT="$end" "${envs[@]}" python3 bench/gpu/sm_workloads.py train \
    >"$RAW/$v.$r.json" 2>"$RAW/$v.$r.err" &
  pid=$!
  taskset -c 0 python3 bench/gpu/thread_cpu.py "$pid" "$start" "$end" "$v.$r" >"$RAW/$v.$r.threads" &
  wait
}
n=${#VARIANTS[@]}
for r in $(seq 1 "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    v=${VARIANTS[$(((k + r - 1) % n))]}
    run_one "$v" "$r"
    printf '%s r%s %s\n' "$v" "$r" "$(cut -c1-60 "$RAW/$v.$r.json")"
  done
done
date -u
python3 - "$RAW" <<'PY'
import glob, json, os, re, sys, statistics
raw = sys.argv[1]
rows = {}
for f in sorted(glob.glob(raw + "/*.json")):
    v, r = os.path.basename(f)[:-5].split(".")
    try:
        res = json.loads(open(f).read().strip().splitlines()[-1])
    except Exception:
        continue
    th = json.loads(open(f[:-5] + ".threads").read())
    win = th["window_s"]
    main = next((t for t in th["threads"] if t["tid"] == res["pid"]), None)
    auto = [t for t in th["threads"] if t["name"].startswith("pt_autograd")]
    sm = [t for t in th["threads"] if t["name"].startswith("vgpu-sm")]
    rest = [t for t in th["threads"] if t is not main and t not in auto and t not in sm]
    err = open(f[:-5] + ".err", errors="replace").read()
    st = re.findall(r"\[vgpu sm-limit\].*", err)
    m = re.search(r"busy_ms=([0-9.]+).*?waits=(\d+).*?records=(\d+)", st[-1]) if st else None
    rows.setdefault(v, []).append(dict(
        rate=res["rate"], main_cpu=main["cpu_ms"] / win / 10 if main else -1,
        main_wait=main["wait_ms"] / win / 10 if main else -1,
        auto_cpu=sum(t["cpu_ms"] for t in auto) / win / 10,
        sm_cpu=sum(t["cpu_ms"] for t in sm) / win / 10,
        rest_cpu=sum(t["cpu_ms"] for t in rest) / win / 10,
        rest_n=len([t for t in rest if t["cpu_ms"] > 1]),
        slices=main["slices"] / win if main else -1,
        stats=(m.group(2) + " waits, " + m.group(3) + " records") if m else ""))
print("%-8s %-22s %8s %8s %8s %8s %8s %8s  %s" % ("variant", "steps/s (runs)", "main%", "mainwait%", "autograd%", "vgpu-sm%", "other%", "slices/s", "stats"))
for v, rs in rows.items():
    med = lambda k: statistics.median(x[k] for x in rs)
    print("%-8s %-22s %8.1f %8.1f %8.1f %8.1f %8.1f %8.0f  %s" % (
        v, "%.2f (%s)" % (med("rate"), " ".join("%.1f" % x["rate"] for x in rs)), med("main_cpu"),
        med("main_wait"), med("auto_cpu"), med("sm_cpu"), med("rest_cpu"), med("slices"),
        "; ".join(x["stats"] for x in rs)))
PY
grep -ah 'cupti-only\]\|cupti-shim\]\|sm-limit\]' "$RAW"/*.err | cut -c1-400
for f in "$RAW"/*.threads; do head -c 900 "$f"; echo; done
tar czf "$OUT/raw29l.tgz" -C "$OUT" raw && rm -rf "$RAW"
