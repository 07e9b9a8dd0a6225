#!/usr/bin/env bash
# Real-GPU acceptance run of the SM limiter (design: docs/sm-limit.md; results and method:
# docs/gpu-results.md, section "SM limit"). Builds libvgpu (release), then runs PyTorch tenants
# (bench/gpu/sm_limit_workload.py) alone and side by side, and prints a table of each tenant's
# throughput relative to the same workload run alone without the library, in the same run.
#
#   bench/gpu/sm_limit_bench.sh            # OUT=<dir> keeps the per-tenant JSON and logs
# Environment: SM_BENCH_WINDOW (s measured per scenario, default 20), SM_BENCH_WARMUP (s before
# the window, default 7), VGPU_LIBRARY (skip the build), SM_BENCH_PARTS (default
# "matmul small launch": the matmul and graph scenarios, the launch-bound loop, launch overhead;
# all three take ≈11 min, more than one 10-minute device call; "shared" runs only the tenants
# that share the GPU, with their baselines; "mixed" the launch-bound loop at 30 beside the matmul
# loop at 70, VGPU_LIBRARY_B adding the same pair with a second build; "alone" the matmul loop
# alone at SM_BENCH_ALONE_LIMITS; "graph" CUDA graph replay at 30; "duty" the launch-bound
# loop pausing itself without libvgpu).
# Each tenant runs pinned to a CPU core of its own (when the machine has enough): the launch-bound
# workload's speed is the CPU's, and an unpinned Python loop varied by ±15 % from run to run. The
# baselines run before and after the limited scenarios; their mean is the reference.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/sm_limit_bench}
mkdir -p "$OUT"
WIN=${SM_BENCH_WINDOW:-20}
WARM=${SM_BENCH_WARMUP:-7}
PY=${PYTHON:-python3}
WORK="$ROOT/bench/gpu/sm_limit_workload.py"

LIB=${VGPU_LIBRARY:-}
if [ -z "$LIB" ]; then
  BUILD="$ROOT/build/release-smbench"
  if cmake --preset release -B "$BUILD" -DVGPU_COMPONENTS="libvgpu;fakes;cli;core;base" \
        >"$OUT/build.log" 2>&1 &&
     cmake --build "$BUILD" -j"$(nproc)" --target vgpu_preload >>"$OUT/build.log" 2>&1; then
    LIB="$BUILD/lib/libvgpu.so"
  elif [ -f "$ROOT/build/release-smlimit/lib/libvgpu.so" ]; then
    echo "build failed (see build.log); using the carried build/release-smlimit/lib/libvgpu.so"
    LIB="$ROOT/build/release-smlimit/lib/libvgpu.so"
  else
    echo "build failed and no carried library"; tail -20 "$OUT/build.log"; exit 1
  fi
fi
echo "library: $LIB"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p /tmp/vgpulock /tmp/smbench
rm -f /tmp/vgpulock/vgpu-sm-* /tmp/smbench/* "$OUT/windows.txt" "$OUT"/meter-*.jsonl

# run_group NAME SPEC...   SPEC = workload:limit:policy ; limit "native" = without libvgpu.
run_group() {
  local name=$1; shift
  local start end i=0 pids=()
  start=$(python3 -c "import time; print(time.time() + $WARM)")
  end=$(python3 -c "print($start + $WIN)")
  for spec in "$@"; do
    IFS=: read -r work limit policy <<<"$spec"
    local log="$OUT/$name-$i"
    local pin=()
    if command -v taskset >/dev/null && [ "$(nproc)" -ge 8 ]; then pin=(taskset -c $((2 + i))); fi
    if [ "$limit" = native ]; then
      START_AT=$start END_AT=$end "${pin[@]}" "$PY" "$WORK" "$work" >"$log.json" 2>"$log.err" &
    else
      LD_PRELOAD="$LIB" CUDA_DEVICE_SM_LIMIT="$limit" GPU_CORE_UTILIZATION_POLICY="$policy" VGPU_SM_STATS=1 \
        CUDA_DEVICE_MEMORY_SHARED_CACHE="/tmp/smbench/$name-$i.cache" \
        START_AT=$start END_AT=$end "${pin[@]}" "$PY" "$WORK" "$work" >"$log.json" 2>"$log.err" &
    fi
    pids+=($!)
    i=$((i + 1))
  done
  for p in "${pids[@]}"; do wait "$p"; done
  echo "$name $start $end" >>"$OUT/windows.txt"
  echo "$name done: $(cat "$OUT/$name"-*.json | tr '\n' ' ' | cut -c1-200)"
}

PARTS=${SM_BENCH_PARTS:-matmul small launch}
part() { [[ " $PARTS " == *" $1 "* ]]; }
if part matmul; then
run_group base_matmul matmul:native:-
run_group base_graph graph:native:-
for l in 10 30 50 70; do run_group "matmul_$l" "matmul:$l:force"; done
run_group graph_30 graph:30:force
run_group pair_30_70 matmul:30:force matmul:70:force
run_group trio_20_30_50 matmul:20:force matmul:30:force matmul:50:force
run_group base2_matmul matmul:native:-
run_group base2_graph graph:native:-
fi
# Only saturating tenants alone at SM_BENCH_ALONE_LIMITS (default "30 70"), with their baselines.
if part alone; then
run_group base_matmul matmul:native:-
for l in ${SM_BENCH_ALONE_LIMITS:-30 70}; do run_group "matmul_$l" "matmul:$l:force"; done
run_group base2_matmul matmul:native:-
fi
# Only CUDA graph replay at 30, with its baselines.
if part graph; then
run_group base_graph graph:native:-
run_group graph_30 graph:30:force
run_group base2_graph graph:native:-
fi
# Only the tenants that share the GPU.
if part shared; then
run_group base_matmul matmul:native:-
run_group pair_30_70 matmul:30:force matmul:70:force
run_group trio_20_30_50 matmul:20:force matmul:30:force matmul:50:force
run_group base2_matmul matmul:native:-
fi
# Tenants of different kinds sharing the GPU: the launch-bound loop at 30 beside the matmul loop at
# 70, each measured against its own workload alone. VGPU_LIBRARY_B: the same pair again with that
# build of the library (an A/B of a change, same run).
if part mixed; then
run_group base_matmul matmul:native:-
run_group base_small small:native:-
run_group mixed_s30_m70 small:30:force matmul:70:force
if [ -n "${VGPU_LIBRARY_B:-}" ]; then LIB=$VGPU_LIBRARY_B run_group mixedB_s30_m70 small:30:force matmul:70:force; fi
run_group base2_small small:native:-
run_group base2_matmul matmul:native:-
fi
# The launch-bound loop's speed is the host CPU's, which drifted by up to ±30 % between identical
# native runs on the GPU machine, and by up to 42 % from one minute to the next. Native and limited
# windows therefore alternate, every limited window between two native ones (N L N L N ...; the
# order of the limits rotates from round to round), and each limited window is compared with the
# mean of its two neighbours; a limit's share is the total over its windows. Windows are
# SM_BENCH_SMALL_WINDOW s (default 12): a tenant alone runs in stretches of up to 1 s of work with
# up to 1 s of waiting in between (docs/sm-limit.md, step 4), so a window much shorter than that
# would measure the phase of that rhythm. Meanwhile a CPU meter (a fixed pure-Python loop on a core
# of its own) and the GPU's SM clock are sampled, to tell the host's drift from the limiter's.
SMALL_WIN=${SM_BENCH_SMALL_WINDOW:-12}
SMALL_REPS=${SM_BENCH_SMALL_REPS:-2}
SMALL_LIMITS=(${SM_BENCH_SMALL_LIMITS:-10 30 50 70})
if part small; then
  METERS=()
  if [ "$(nproc)" -ge 8 ] && command -v taskset >/dev/null; then
    taskset -c 1 "$PY" "$ROOT/bench/gpu/host_meter.py" cpu "$OUT/meter-cpu.jsonl" & METERS+=($!)
    taskset -c 0 "$PY" "$ROOT/bench/gpu/host_meter.py" gpu "$OUT/meter-gpu.jsonl" 2>/dev/null & METERS+=($!)
  fi
  WIN=$SMALL_WIN WARM=5
  : >"$OUT/small_order.txt"
  w=0
  small_window() {  # small_window native|LIMIT: the next window, its name and kind in small_order.txt
    local spec="small:$1:force"
    [ "$1" = native ] && spec=small:native:-
    run_group "smallw${w}_$1" "$spec"
    echo "smallw${w}_$1 $1" >>"$OUT/small_order.txt"
    w=$((w + 1))
  }
  n=${#SMALL_LIMITS[@]}
  for rep in $(seq 1 "$SMALL_REPS"); do
    for k in $(seq 0 $((n - 1))); do
      small_window native
      small_window "${SMALL_LIMITS[$(((k + rep - 1) % n))]}"
    done
  done
  small_window native
  for m in "${METERS[@]}"; do kill "$m" 2>/dev/null; wait "$m" 2>/dev/null; done
fi
# What pauses alone cost the launch-bound loop on this host: the loop without libvgpu, pausing
# itself in the limiter's rhythm for a tenant alone at 30 and 70 %, its rate while running
# compared with the continuous native loop around it (a CPU that slows down after each sleep
# slows the limited loop the same way, through no fault of the limiter's accounting).
if part duty; then
  WIN=$SMALL_WIN WARM=5
  for rep in 1 2; do
    run_group "dutyrep${rep}_native" small:native:-
    run_group "dutyrep${rep}_d30" small_duty30:native:-
    run_group "dutyrep${rep}_l30" small:30:force
    run_group "dutyrep${rep}_d70" small_duty70:native:-
    run_group "dutyrep${rep}_l70" small:70:force
  done
  run_group "dutyrep3_native" small:native:-
fi
WARM=6 WIN=1
if part launch; then
run_group launch_native launch:native:-
run_group launch_limit100 launch:100:force
run_group launch_disable launch:30:disable
run_group launch_native2 launch:native:-
fi

"$PY" - "$OUT" <<'PYEOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
def load(name):
    res = []
    for f in sorted(glob.glob(os.path.join(out, name + "-*.json"))):
        try:
            res.append(json.loads(open(f).read().strip().splitlines()[-1]))
        except Exception as e:
            res.append({"error": str(e)})
    return res
base = {}
# Each workload is judged against its own baselines, when this run measured them.
for w in [w for w in ("matmul", "graph") if glob.glob(os.path.join(out, "base_%s-*.json" % w))]:
    runs = [(load(b + "_" + w) or [{}])[0].get("iters_per_s", float("nan"))
            for b in ("base", "base2")]
    base[w] = statistics.mean(runs)
    print("baseline %-7s %s iterations/s (before, after); reference = mean" %
          (w, ", ".join("%.1f" % x for x in runs)))
print("\nSM limit on %s" % open(os.path.join(out, "gpu.txt")).read().strip())
print("%-16s %-8s %8s %8s %10s %s" % ("scenario", "limit", "share%", "target", "spread", "per-second shares %"))
rows = [("matmul_10", [10]), ("matmul_30", [30]), ("matmul_50", [50]), ("matmul_70", [70]),
        ("graph_30", [30]),
        ("pair_30_70", [30, 70]), ("trio_20_30_50", [20, 30, 50])]
for name, targets in rows:
    work = name.split("_")[0]
    work = "matmul" if work in ("pair", "trio") else work
    runs = load(name)
    if work not in base or not runs:
        continue
    for r, t in zip(runs, targets):
        if "iters_per_s" not in r:
            print("%-16s %-8s failed: %s" % (name, t, r)); continue
        share = 100 * r["iters_per_s"] / base[work]
        per = [100 * x / base[work] for x in r["per_second"]]
        spread = "%.1f-%.1f" % (min(per), max(per)) if per else "-"
        print("%-16s %-8s %8.1f %8d %10s %s" % (name, t, share, t, spread, " ".join("%.0f" % p for p in per)))
    if len(targets) > 1 and len(runs) == len(targets) and all("iters_per_s" in r for r in runs):
        # Limits that add up to 100: what each got of what the GPU delivered to them all.
        total = sum(r["iters_per_s"] for r in runs)
        print("%-16s split of the %.1f %% delivered: %s (targets %s)" % (
            name, 100 * total / base[work],
            " : ".join("%.1f" % (100 * r["iters_per_s"] / total) for r in runs),
            " : ".join(str(t) for t in targets)))
for name in ("mixed_s30_m70", "mixedB_s30_m70"):
    runs = load(name)
    if not runs:
        continue
    refs = {}
    for w in ("small", "matmul"):
        vals = [(load(b + "_" + w) or [{}])[0].get("iters_per_s", float("nan")) for b in ("base", "base2")]
        refs[w] = statistics.mean(vals)
    label = name + (" (VGPU_LIBRARY_B)" if name.startswith("mixedB") else "")
    for r, (w, t) in zip(runs, (("small", 30), ("matmul", 70))):
        if "iters_per_s" not in r:
            print("%-16s %-8s failed: %s" % (label, t, r)); continue
        per = [100 * x / refs[w] for x in r["per_second"]]
        print("%-16s %-8s %8.1f %8d %10s %s (%s, native %.0f/s)" % (
            label, t, 100 * r["iters_per_s"] / refs[w], t,
            "%.1f-%.1f" % (min(per), max(per)) if per else "-",
            " ".join("%.0f" % p for p in per), w, refs[w]))
def samples(kind, key, t0, t1):
    path = os.path.join(out, "meter-%s.jsonl" % kind)
    if not os.path.exists(path):
        return []
    res = []
    for line in open(path):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if t0 <= d["t"] < t1:
            res.append(d[key])
    return res
windows = {}
if os.path.exists(os.path.join(out, "windows.txt")):
    for line in open(os.path.join(out, "windows.txt")):
        name, t0, t1 = line.split()
        windows[name] = (float(t0), float(t1))
def cov(name):
    t0, t1 = windows.get(name, (0, 0))
    c = samples("cpu", "cpu", t0, t1)
    g = samples("gpu", "sm_mhz", t0, t1)
    u = samples("gpu", "util", t0, t1)
    return "cpu meter %s, SM clock %s MHz, util %s %%" % (
        "%.0f" % statistics.mean(c) if c else "-", "%.0f" % statistics.median(g) if g else "-",
        "%.0f" % statistics.mean(u) if u else "-")
order = []
if os.path.exists(os.path.join(out, "small_order.txt")):
    order = [line.split() for line in open(os.path.join(out, "small_order.txt")) if line.strip()]
def rate(name):
    return (load(name) or [{}])[0].get("iters_per_s")
natives = [(i, rate(name)) for i, (name, kind) in enumerate(order) if kind == "native"]
if natives:
    print("\nlaunch-bound loop, native windows (iterations/s): " +
          " ".join("%.0f" % r if r else "failed" for _, r in natives))
    for i, r in natives:
        print("  %s: %s" % (order[i][0], cov(order[i][0])))
by_limit = {}
for i, (name, kind) in enumerate(order):
    if kind == "native":
        continue
    before = rate(order[i - 1][0]) if i > 0 and order[i - 1][1] == "native" else None
    after = rate(order[i + 1][0]) if i + 1 < len(order) and order[i + 1][1] == "native" else None
    lim = rate(name)
    if not (before and after and lim):
        print("%-16s window %s failed or has no native neighbours" % ("small_" + kind, name))
        continue
    by_limit.setdefault(int(kind), []).append((name, lim, (before + after) / 2, before, after))
for t in sorted(by_limit):
    wins = by_limit[t]
    share = 100 * sum(w[1] for w in wins) / sum(w[2] for w in wins)
    per = [100 * w[1] / w[2] for w in wins]
    print("%-16s %-8s %8.1f %8d %10s %s" % ("small_%d" % t, t, share, t,
          "%.1f-%.1f" % (min(per), max(per)),
          "per window vs its two native neighbours: " + " ".join(
              "%.1f (%.0f/%.0f)" % (p, w[3], w[4]) for p, w in zip(per, wins))))
    for w in wins:
        print("  %s: %s" % (w[0], cov(w[0])))
for rep in (1, 2):
    around = [(load("dutyrep%d_native" % r) or [{}])[0].get("iters_per_s") for r in (rep, rep + 1)]
    if None in around:
        continue
    ref = statistics.mean(around)
    print("duty round %d: native %s iterations/s" % (rep, " / ".join("%.0f" % x for x in around)))
    for tag in ("d30", "l30", "d70", "l70"):
        r = (load("dutyrep%d_%s" % (rep, tag)) or [{}])[0]
        if "iters_per_s" not in r:
            continue
        extra = ""
        if "iters_per_running_s" in r:
            extra = ", while running %.1f %% of native (ran %.2f s)" % (
                100 * r["iters_per_running_s"] / ref, r["running_s"])
        print("  %s: %.1f %% of native%s" % (tag, 100 * r["iters_per_s"] / ref, extra))
nat = [load(n)[0].get("launches_per_s") for n in ("launch_native", "launch_native2") if load(n)]
nat = [x for x in nat if x]
native = statistics.median(nat) if nat else float("nan")
for n in ("launch_limit100", "launch_disable"):
    r = (load(n) or [{}])[0]
    if "launches_per_s" in r:
        print("%-16s launches/s %.0f vs native %.0f: overhead %+.2f%%" %
              (n, r["launches_per_s"], native, 100 * (native / r["launches_per_s"] - 1)))
if nat:
    print("native launch rates:", ", ".join("%.0f" % x for x in nat))
PYEOF
