#!/usr/bin/env bash
# Real-GPU benchmark that judges the SM (compute) limiter with realistic tenants
# (bench/gpu/sm_workloads.py: a host-bound training loop, a saturating one, open- and closed-loop
# inference, and sm_limit_workload.py's loops). Every limited configuration runs beside its native
# reference in the same invocation, REPS times (the order of the configurations rotating from
# round to round); tenants started together share one window (START_AT/END_AT). Each part prints
# a table (median [min-max] over the repetitions) and a summary of its acceptance checks
# (PASS/FAIL); sm_v2_report.py holds the formulas and re-prints any part from the raw files:
#   python3 bench/gpu/sm_v2_report.py PART $OUT [$OUT2...]   (several: their repetitions pooled)
#
#   PARTS="calib train" bench/gpu/sm_v2_bench.sh
#
# PARTS (space-separated; default: all but tune). Wall times measured/estimated on an H100 with
# the defaults (WARM 14, WIN 8, REPS 3: ~24 s a run; a tenant's start-up took 8-10 s there):
#   calib            native --profile of train, train-sat, infer-closed, infer-open     ~6 min
#                    (the other parts run a missing calibration once by themselves, ~30 s each)
#   train            train alone: native, gpucores 30, 50                                ~4 min
#   pair             two train containers: unlimited, 50+50, 30+70                       ~4 min
#   infer            = infer-alone infer-pair infer-closed                               ~8 min
#     infer-alone    infer-open at ~INFER_DEMAND % of the GPU: native, 50                ~2.5 min
#     infer-pair     infer-open beside train-sat: unlimited, 50+50                       ~2.5 min
#     infer-closed   infer-closed: native, 30                                            ~2.5 min
#   matmul           sm_limit_bench.sh's matmul part (alone 10/30/50/70, graph 30, pair
#                    30+70, trio 20/30/50), MATMUL_REPS times (default 2)                ~3 min each
#   cost             (not in the default) train: native, libvgpu without a limit, at 30, 50, 90;
#                    at 50 with LIBVGPU_PREV if set; with COST_MORE=1 also at 50 with events,
#                    native and at 50 on two cores                                     ~6-9 min
#   overhead         = overhead-small overhead-train: native / libvgpu without a limit /
#                    a limit that does not bind, OVH_ROUNDS (default 5) rounds           ~6 min each
#                    (OVH_AA=1: a second native group in the same rounds, native2, an A/A
#                    control whose spread against native is the resolution floor; OVH_LIMIT:
#                    the limit of overhead-train instead of the one from a calibration run;
#                    OVH_EVENTS=1: that limit again without CUPTI, events only)
#                    Optional, for a design that resolves small differences (none by default):
#                    OVH_PIN=CPUS pins every overhead process to that core set (taskset -c,
#                    e.g. 8-11) instead of one core; OVH_SMALL_UNITS / OVH_TRAIN_UNITS=N: fixed
#                    work, each process runs N units after its first two and WARM s more (so
#                    WARM no longer has to cover the start-up) and reports their rate;
#                    OVH_ORDER=random: the groups in a fresh random order each round (seeded by
#                    OVH_SEED, default 1) instead of rotated; OVH_BUDGET_S: no new round once
#                    that many seconds of the part have passed or the next round would overrun
#                    them. `sm_v2_report.py ovh-ci OUT...` prints paired ratios with bootstrap
#                    95 % intervals, the A/A control's beside them (OVH_AA=1). Whole processes
#                    taking turns on the GPU instead: bench/gpu/ovh_turns.py. On the lent H200
#                    VMs neither resolved 1-2 % (docs/gpu-results.md, History, 2026-11-28).
#   robust           = robust-lock robust-shared robust-profiler                          ~8 min
#     robust-lock    train at 30 with /tmp/vgpulock absent, then present (+ native)      ~4 min
#     robust-shared  two train processes of one container (one region) at 30            ~1.5 min
#     robust-profiler train at 30 with torch.profiler running in the app (+ native)      ~3 min
#   tune             (not in the default) native --profile of train over TUNE_TRAIN
#                    ("layers:batch ...") and of infer-closed over TUNE_INFER (layers),
#                    to pick the sizes                                                    ~4 min
# A device call may run 10 minutes: split PARTS accordingly (e.g. "calib", "train pair", "infer",
# "matmul", "overhead-small", "overhead-train", "robust-lock robust-shared", "robust-profiler").
#
# Two builds in one run (A/B of a change): LIBVGPU=new/libvgpu.so LIBVGPU_PREV=old/libvgpu.so.
# Then train, pair and infer-pair also run every limited group with the old build (groups
# <name>_prev, in the same rounds, so the host's drift hits both alike), and matmul runs
# sm_limit_bench.sh with each build in turn (OUT/matmul/r<N> new, OUT/matmul-prev/r<N> old);
# the reports print both (prev = LIBVGPU_PREV). Each such part takes about 5/3 (train, pair) or
# 3/2 (infer-pair) of its time above, matmul twice its. cost has its own cost_50_prev group.
# DRY_RUN=1: print what each group would start (no GPU, no tenants, no reports), to check a
# command line.
#
# Environment: OUT (default /tmp/vgpu-sm-v2; raw JSON and stderr under OUT/raw, kept between
# invocations so parts can be run one by one; FRESH=1 empties it), LIBVGPU (library to use; else
# .devbuild/libvgpu.so, else a CMake build in WORKDIR, default /tmp/vgpu-sm-v2-work), REPS, WARM
# (s of warm-up before the window; the tenants' start-up must fit), WIN (window s), PROFILE_S (s
# profiled in calib, default 5), TRAIN_ARGS / SAT_ARGS / INFER_ARGS (extra sm_workloads.py
# options for train / train-sat / infer-*, e.g. TRAIN_ARGS="--layers 12 --batch 24"),
# INFER_RATE (requests/s of infer-open; default from calib: INFER_DEMAND % (30) of the GPU),
# NVML=0 (no per-process SM utilisation sampling; it never runs during overhead).
# Tenants are pinned to one core each (2, 4, 6; the NVML sampler to core 0) where the host has 8
# or more. Each tenant's JSON has cpu_pct: its threads' CPU over the window (the limiter's: vgpu-sm).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/vgpu-sm-v2}
RAW=$OUT/raw
REPS=${REPS:-3}
WARM=${WARM:-14}
WIN=${WIN:-8}
PROFILE_S=${PROFILE_S:-5}
PY=${PYTHON:-python3}
WORK=$HERE/sm_workloads.py
REPORT=$HERE/sm_v2_report.py
LOCKDIR=/tmp/vgpulock
CACHEDIR=/tmp/vgpu-bench
WORKDIR=${WORKDIR:-/tmp/vgpu-sm-v2-work}
[ "${FRESH:-0}" = 1 ] && rm -rf "$RAW"
mkdir -p "$RAW" "$CACHEDIR"
unset LD_PRELOAD CUDA_DEVICE_SM_LIMIT GPU_CORE_UTILIZATION_POLICY CUDA_DEVICE_MEMORY_SHARED_CACHE \
  VGPU_SM_STATS CUDA_TASK_PRIORITY
export PYTHONUNBUFFERED=1

PARTS_ALL="calib train pair infer matmul overhead robust"
PARTS_EXP=""
for p in ${PARTS:-$PARTS_ALL}; do
  case $p in
    infer) PARTS_EXP+=" infer-alone infer-pair infer-closed" ;;
    overhead) PARTS_EXP+=" overhead-small overhead-train" ;;
    robust) PARTS_EXP+=" robust-lock robust-shared robust-profiler" ;;
    *) PARTS_EXP+=" $p" ;;
  esac
done
part() { [[ "$PARTS_EXP " == *" $1 "* ]]; }

LIB=${LIBVGPU:-}
need_lib() {  # the library, built once if neither LIBVGPU nor .devbuild/libvgpu.so is there
  [ -n "$LIB" ] && return 0
  if [ -f "$ROOT/.devbuild/libvgpu.so" ]; then
    LIB=$ROOT/.devbuild/libvgpu.so
  else
    echo "building libvgpu (release) in $WORKDIR/build ..."
    mkdir -p "$WORKDIR"
    if ! { cmake --preset release -S "$ROOT" -B "$WORKDIR/build" -DVGPU_COMPONENTS="libvgpu" &&
           cmake --build "$WORKDIR/build" -j"$(nproc)" --target vgpu_preload; } >"$WORKDIR/build.log" 2>&1; then
      tail -20 "$WORKDIR/build.log"
      echo "libvgpu build failed"
      exit 1
    fi
    LIB=$WORKDIR/build/lib/libvgpu.so
  fi
  echo "library: $LIB"
}

fresh_lockdir() {  # no tenant runs between groups: whatever is in the node-wide directory is stale
  rm -rf "$LOCKDIR"
  mkdir -p "$LOCKDIR" && chmod 1777 "$LOCKDIR"
}

kind_args() {  # kind_args KIND: the user's size options for that kind (word-split on purpose)
  case $1 in
    train) echo "${TRAIN_ARGS:-}" ;;
    train-sat) echo "${SAT_ARGS:-}" ;;
    infer-*) echo "${INFER_ARGS:-}" ;;
  esac
}

# run_group REP NAME [@nolock] SPEC...  One group = tenants started together, one window.
# SPEC = KIND:LIMIT[:CONTAINER[:EXTRA]]; LIMIT: native (no libvgpu), none (libvgpu, no limit) or
# a percentage (policy force), each optionally followed by /events (VGPU_CUPTI_LIBRARY=off: the
# limiter measures with CUDA events), /2cpu (the tenant on two cores instead of one) and /prev
# (the library LIBVGPU_PREV instead, to compare two builds in one run); tenants with the same CONTAINER tag share one region file
# (default: each its own); EXTRA: more sm_workloads.py options, comma-separated.
# @nolock: /tmp/vgpulock absent during the group (it is recreated afterwards).
run_group() {
  local rep=$1 name=$2
  shift 2
  local nolock=0
  if [ "${1:-}" = @nolock ]; then nolock=1; shift; fi
  local tag=$name.r$rep i=0 pids=() spec kind limit box extra now start end
  rm -f "$RAW/$tag".* "$CACHEDIR/$tag".*
  fresh_lockdir
  [ $nolock = 1 ] && rm -rf "$LOCKDIR"
  now=$(date +%s.%N)
  start=$(awk -v n="$now" -v w="$WARM" 'BEGIN { printf "%.3f", n + w }')
  end=$(awk -v s="$start" -v w="$WIN" 'BEGIN { printf "%.3f", s + w }')
  echo "$name $rep $start $end $([ $nolock = 1 ] && echo absent || echo present)" >"$RAW/$tag.spec.tmp"
  for spec in "$@"; do
    IFS=: read -r kind limit box extra <<<"$spec"
    box=${box:-$i}
    local envs=(START_AT="$start" END_AT="$end") pin=() args=()
    # shellcheck disable=SC2207  # the user's option string, split into words on purpose
    args=($(kind_args "$kind"))
    [ -n "$extra" ] && IFS=, read -r -a ex <<<"$extra" && args+=("${ex[@]}")
    local base=${limit%%/*} cpus=1 lib=$LIB
    [[ "$limit" == */events* ]] && envs+=(VGPU_CUPTI_LIBRARY=off)
    [[ "$limit" == */prev* ]] && lib=${LIBVGPU_PREV:?"/prev needs LIBVGPU_PREV"}
    [[ "$limit" == */2cpu* ]] && cpus=2
    case $base in
      native) ;;
      none) envs+=(LD_PRELOAD="$lib" CUDA_DEVICE_MEMORY_SHARED_CACHE="$CACHEDIR/$tag.$box.cache") ;;
      *) envs+=(LD_PRELOAD="$lib" CUDA_DEVICE_MEMORY_SHARED_CACHE="$CACHEDIR/$tag.$box.cache"
                CUDA_DEVICE_SM_LIMIT="$base" GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1) ;;
    esac
    if [ -n "${RG_PIN:-}" ]; then  # the overhead parts' OVH_PIN: one core set for every process
      pin=(taskset -c "$RG_PIN")
    elif command -v taskset >/dev/null && [ "$(nproc)" -ge 8 ]; then
      pin=(taskset -c "$((2 + 2 * i))$([ $cpus = 2 ] && echo ",$((3 + 2 * i))")")
    fi
    if [ -n "${RG_UNITS:-}" ]; then  # fixed work: no common window, WARM s after the first units
      envs[0]=START_AT= envs[1]=END_AT=
      args+=(--units "$RG_UNITS" --warmup "$WARM")
    fi
    if [ "${DRY_RUN:-0}" = 1 ]; then
      echo "  DRY_RUN $tag.$i: ${pin[*]} env ${envs[*]} $PY $WORK $kind ${args[*]}"
      i=$((i + 1))
      continue
    fi
    "${pin[@]}" env "${envs[@]}" "$PY" "$WORK" "$kind" "${args[@]}" >"$RAW/$tag.$i.json" 2>"$RAW/$tag.$i.err" &
    pids+=($!)
    echo "$i $kind $limit $box $!" >>"$RAW/$tag.spec.tmp"
    i=$((i + 1))
  done
  for p in "${pids[@]}"; do wait "$p"; done
  if [ "${DRY_RUN:-0}" = 1 ]; then rm -f "$RAW/$tag.spec.tmp"; return 0; fi
  mv "$RAW/$tag.spec.tmp" "$RAW/$tag.spec"
  [ $nolock = 1 ] && fresh_lockdir
  printf '  %-18s rep %s:' "$name" "$rep"
  for ((k = 0; k < i; k++)); do printf ' %s' "$(cut -c1-90 "$RAW/$tag.$k.json" 2>/dev/null || echo failed)"; done
  echo
}

# rounds N "NAME SPEC..." ...  N rounds of the groups, their order rotated by one each round (so
# a drift of the host or GPU does not always hit the same configuration). ROUND_ORDER=random: a
# fresh random order each round instead (bash's RANDOM, seeded by the caller); ROUND_BUDGET_S: no
# new round once that many seconds have passed or the last round's length would overrun them.
rounds() {
  local n=$1 r k
  shift
  local groups=("$@") g order t0 t1 last=0
  for g in "${groups[@]}"; do rm -f "$RAW/${g%% *}".r*; done  # this invocation's results only
  t0=$(date +%s)
  for r in $(seq 1 "$n"); do
    if [ -n "${ROUND_BUDGET_S:-}" ] && [ $(($(date +%s) - t0 + last)) -gt "$ROUND_BUDGET_S" ]; then
      echo "  (round budget of $ROUND_BUDGET_S s reached after $((r - 1)) rounds)"
      break
    fi
    t1=$(date +%s)
    order=()
    for k in $(seq 0 $((${#groups[@]} - 1))); do order+=($(((k + r - 1) % ${#groups[@]}))); done
    if [ "${ROUND_ORDER:-rotate}" = random ]; then  # Fisher-Yates
      for ((k = ${#order[@]} - 1; k > 0; k--)); do
        local j=$((RANDOM % (k + 1))) tmp=${order[k]}
        order[k]=${order[j]}
        order[j]=$tmp
      done
    fi
    for k in "${order[@]}"; do
      g=${groups[$k]}
      # shellcheck disable=SC2086  # NAME and SPECs are single words
      run_group "$r" $g
    done
    last=$(($(date +%s) - t1))
  done
}

report() { [ "${DRY_RUN:-0}" = 1 ] || "$PY" "$REPORT" "$1" "$OUT" | tee "$OUT/$1.txt"; }
# prev_groups "NAME SPEC..." ...: with LIBVGPU_PREV, each group again as NAME_prev with every
# limited tenant on that build (LIMIT/prev); native tenants stay native.
prev_groups() {
  local g w out
  [ -n "${LIBVGPU_PREV:-}" ] || return 0
  for g in "$@"; do
    out=""
    for w in $g; do
      if [ -z "$out" ]; then
        out="${w}_prev"
      else
        IFS=: read -r kind limit rest <<<"$w"
        [[ "$limit" =~ ^[0-9]+ ]] && limit="$limit/prev"
        out+=" $kind:$limit${rest:+:$rest}"
      fi
    done
    printf '%s\n' "$out"
  done
}

infer_rate() {
  if [ -n "${INFER_RATE:-}" ]; then echo "$INFER_RATE"; else "$PY" "$REPORT" infer-rate "$OUT"; fi
}

calib_spec() {  # calib_spec KIND: the native profiled run of a kind
  local s="$1:native::--profile,$PROFILE_S"
  [ "$1" = infer-open ] && s+=",--rate,$(infer_rate)"
  echo "$s"
}

need_calib() {  # need_calib KIND...: one calibration run for each kind that has none yet
  local k
  for k in "$@"; do
    if ! grep -qs gpu_ms_per_unit "$RAW"/calib_"$k".r*.0.json; then
      echo "(no calibration of $k in $OUT: one run)"
      run_group 1 "calib_$k" "$(calib_spec "$k")"
    fi
  done
}

MON=
if [ "${NVML:-1}" = 1 ] && [ "${DRY_RUN:-0}" != 1 ] && "$PY" -c 'import pynvml' 2>/dev/null; then
  mon_pin=()
  if command -v taskset >/dev/null && [ "$(nproc)" -ge 8 ]; then mon_pin=(taskset -c 0); fi
  "${mon_pin[@]}" "$PY" "$REPORT" nvml "$OUT/nvml.jsonl" &
  MON=$!
fi
stop_nvml() { [ -n "$MON" ] && kill "$MON" 2>/dev/null && wait "$MON" 2>/dev/null; MON=; }
trap stop_nvml EXIT

if [ "${DRY_RUN:-0}" = 1 ]; then
  echo "DRY_RUN: nothing is started" | tee "$OUT/gpu.txt"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
fi
echo "parts:$PARTS_EXP  (REPS $REPS, WARM $WARM s, WIN $WIN s, OUT $OUT)"

if part tune; then
  for lb in ${TUNE_TRAIN:-16:16 24:16 24:24 24:32 32:24}; do
    run_group 1 "tune_train_l${lb%:*}_b${lb#*:}" "train:native::--profile,3,--layers,${lb%:*},--batch,${lb#*:}"
  done
  for l in ${TUNE_INFER:-12 16 20}; do
    run_group 1 "tune_infer_l$l" "infer-closed:native::--profile,3,--layers,$l"
  done
  for f in "$RAW"/tune_*.0.json; do
    "$PY" -c 'import json, sys; d = json.loads(open(sys.argv[1]).read().splitlines()[-1]); a = d["args"]
print("%-28s layers %s d %s batch %s seq %s: U %.1f %%, %.3f GPU ms/unit, %.1f units/s" % (
    sys.argv[1].split("/")[-1], a["layers"], a["d_model"], a["batch"], a["seq"], 100 * d["U"],
    d["gpu_ms_per_unit"], d["rate_native"]))' "$f" || echo "$f: failed"
  done
fi

if part calib; then
  for k in train train-sat infer-closed; do
    rounds "$REPS" "calib_$k $(calib_spec "$k")"
  done
  rounds "$REPS" "calib_infer-open $(calib_spec infer-open)"  # its rate comes from infer-closed's
  report calib
fi

if part train; then
  need_lib
  need_calib train
  limited=("train_30 train:30" "train_50 train:50")
  mapfile -t prev < <(prev_groups "${limited[@]}")
  rounds "$REPS" "train_native train:native" "${limited[@]}" "${prev[@]}"
  report train
fi

if part pair; then
  need_lib
  need_calib train
  limited=("pair_50_50 train:50 train:50" "pair_30_70 train:30 train:70")
  mapfile -t prev < <(prev_groups "${limited[@]}")
  rounds "$REPS" "pair_native train:native train:native" "${limited[@]}" "${prev[@]}"
  report pair
fi

if part infer-alone; then
  need_lib
  need_calib infer-closed infer-open
  R=$(infer_rate)
  echo "infer-open at $R requests/s"
  rounds "$REPS" "inf_native infer-open:native::--rate,$R" "inf_50 infer-open:50::--rate,$R"
  report infer-alone
fi

if part infer-pair; then
  need_lib
  need_calib infer-closed infer-open train-sat
  R=$(infer_rate)
  echo "infer-open at $R requests/s beside train-sat"
  limited=("infp_50_50 infer-open:50::--rate,$R train-sat:50")
  mapfile -t prev < <(prev_groups "${limited[@]}")
  rounds "$REPS" "infp_native infer-open:native::--rate,$R train-sat:native" "${limited[@]}" "${prev[@]}"
  report infer-pair
fi

if part infer-closed; then
  need_lib
  need_calib infer-closed
  rounds "$REPS" "infc_native infer-closed:native" "infc_30 infer-closed:30"
  report infer-closed
fi

if part matmul; then
  need_lib
  fresh_lockdir
  builds=("matmul $LIB")
  [ -n "${LIBVGPU_PREV:-}" ] && builds+=("matmul-prev $LIBVGPU_PREV")
  for r in $(seq 1 "${MATMUL_REPS:-2}"); do
    for b in "${builds[@]}"; do  # with LIBVGPU_PREV: new, old, new, old, ...
      dir=$OUT/${b%% *}/r$r
      if [ "${DRY_RUN:-0}" = 1 ]; then
        echo "  DRY_RUN OUT=$dir SM_BENCH_PARTS=matmul VGPU_LIBRARY=${b#* } sm_limit_bench.sh"
        continue
      fi
      mkdir -p "$dir"
      OUT=$dir SM_BENCH_PARTS=matmul SM_BENCH_WINDOW=$WIN SM_BENCH_WARMUP=${MATMUL_WARM:-6} \
        VGPU_LIBRARY=${b#* } bash "$HERE/sm_limit_bench.sh" | tee "$dir.txt"
    done
  done
  report matmul
fi

if part cost; then  # where a limit that does not bind costs a host-bound loop its speed
  need_lib
  need_calib train
  groups=("cost_native train:native" "cost_none train:none" "cost_30 train:30" "cost_50 train:50"
          "cost_90 train:90")
  [ -n "${LIBVGPU_PREV:-}" ] && groups+=("cost_50_prev train:50/prev")
  [ -n "${COST_MORE:-}" ] && groups+=("cost_50_events train:50/events"
                                      "cost_native_2cpu train:native/2cpu" "cost_50_2cpu train:50/2cpu")
  rounds "$REPS" "${groups[@]}"
  report cost
fi

if part robust-lock; then
  need_lib
  need_calib train
  rounds "$REPS" "lock_native train:native" "lock_absent_30 @nolock train:30" "lock_present_30 train:30"
  report robust-lock
fi

if part robust-shared; then
  need_lib
  need_calib train
  rounds "$REPS" "shared_30 train:30:c train:30:c"
  report robust-shared
fi

if part robust-profiler; then
  need_lib
  need_calib train
  rounds "$REPS" "prof_native train:native::--with-profiler" "prof_30 train:30::--with-profiler"
  report robust-profiler
fi

for k in small train; do
  part "overhead-$k" || continue
  need_lib
  stop_nvml  # its polling would be part of what is measured
  L=90
  if [ "$k" = train ]; then
    if [ -n "${OVH_LIMIT:-}" ]; then L=$OVH_LIMIT; else need_calib train && L=$("$PY" "$REPORT" ovh-limit "$OUT"); fi
  fi
  groups=("ovh_${k}_native $k:native")
  [ "${OVH_AA:-0}" = 1 ] && groups+=("ovh_${k}_native2 $k:native")
  groups+=("ovh_${k}_preload $k:none" "ovh_${k}_l$L $k:$L")
  # OVH_EVENTS=1: the same limit without CUPTI (events only), to tell what kernel records cost.
  [ "${OVH_EVENTS:-0}" = 1 ] && groups+=("ovh_${k}_l${L}ev $k:$L/events")
  units=OVH_${k^^}_UNITS
  [ "${OVH_ORDER:-rotate}" = random ] && RANDOM=${OVH_SEED:-1}
  RG_PIN=${OVH_PIN:-} RG_UNITS=${!units:-} ROUND_ORDER=${OVH_ORDER:-rotate} ROUND_BUDGET_S=${OVH_BUDGET_S:-} \
    rounds "${OVH_ROUNDS:-5}" "${groups[@]}"
  report "overhead-$k"
done
