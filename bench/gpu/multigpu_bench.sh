#!/bin/bash
# Real-GPU checks of libvgpu.so on a machine with 2 GPUs (issue 23). One device call, ~4 minutes.
#
# HOW TO RUN (lead): build the library on the development machine, then carry .devbuild:
#   bench/gpu/prepare_devbuild.sh                      # -> .devbuild/libvgpu.so, .devbuild/vgpu
#   device tool: kind nvidia-h100-x2 (or nvidia-h200-x2), carry [".devbuild"], timeout_s 600,
#     command:  bash bench/gpu/multigpu_bench.sh
# Output: one `RESULT <part> <PASS|FAIL|SKIP> <numbers>` line per check as it finishes, then a table;
# $OUT/multigpu_summary.txt (the table) and $OUT/multigpu_logs.tar.gz (every log and JSON).
# Needs: 2 NVIDIA GPUs, nvidia-smi, python3 with torch (CUDA, NCCL). No build, no network.
# Expected runtime ~4 min (A 30 s, B 40 s, C 60 s, D 90 s, setup 10 s); every step has a timeout and
# the whole script stops starting steps when MG_BUDGET_S (default 530 s) would be exceeded, so it
# ends (with the table) inside one 600-s device call. A part that fails or times out is recorded
# and the next one runs. Without a GPU (or torch, or the library) every part is SKIP with the reason.
#
# Parts (run order A, B, C1, D, D2, C2):
#  A  one process, both GPUs, CUDA_DEVICE_MEMORY_LIMIT_0=8g _1=16g (A1) and swapped as
#     16384m/8192m (A2): PyTorch fills device 0 then device 1 (holding device 0 full) with 256 MiB
#     then 16 MiB tensors until torch.OutOfMemoryError. PASS per device: cuMemGetInfo and
#     totalGlobalMem = its own limit; the fill ends with an OOM; its footprint (the driver's
#     per-process figure from nvidia-smi, i.e. CUDA context + modules + PyTorch's segments — the
#     library measures and charges the context, ~0.5 GiB on an H100) lies in [limit - 300 MiB,
#     limit + 2 MiB]; the library reports < 32 MiB free at OOM; the region's record for that UUID
#     holds that limit; not stopped near the other device's limit. PyTorch's tensors alone therefore
#     reach limit - context (printed as "tensors"). A1.smi/A2.smi: nvidia-smi run under the preload
#     shows each GPU's limit as memory.total.
#  B  the container given the node's GPU 1 (HAMi semantics, libvgpu/src/state.c and
#     tests/libvgpu/multigpu_test.cpp: limit index = CUDA ordinal as the process sees it, records
#     keyed by UUID): the process sees one device 0 with _0's limit (6 GiB; _1=12g is set as a decoy
#     and must not apply), OOMs there, and runs on physical GPU 1 (torch UUID = nvidia-smi's GPU 1,
#     its footprint on GPU 1, nothing on GPU 0). B1: CUDA_VISIBLE_DEVICES=1; B2: `vgpu run --gpus 1
#     --gpumem 6144`; B3: CUDA_VISIBLE_DEVICES=<GPU 1's UUID> (what the device plugin's
#     NVIDIA_VISIBLE_DEVICES amounts to). B1.smi: nvidia-smi under the preload shows GPU 1 at 6144.
#  C  NCCL as one pod granted both GPUs: 2 ranks, both GPUs visible, rank r on cuda:r, limits
#     _0=_1=4g, one region; all_reduce of 256 MiB per rank (rank r holds r+1) must give 3 everywhere.
#     The library's usage (cuMemGetInfo: limit - free) before NCCL, after the eager communicator init
#     and after the first all_reduce, against torch.cuda.memory_reserved: the difference is NCCL's
#     own memory (cuMem*/cudaMalloc buffers: "tracked"; module/context growth measured by the
#     library through NVML: "measured"). C1 PASS: sums right, NCCL charged >= 8 MiB on each rank,
#     real footprint <= limit. C2 (negative): limits = C1's pre-NCCL usage + min(50 MiB, half of
#     what NCCL took); PASS when init/all_reduce fails with an OOM (LIBCUDA_LOG_LEVEL=2 shows the
#     library's refusal); FAIL when it completes above the limit or hangs.
#  D  one process, both GPUs, CUDA_DEVICE_SM_LIMIT_0=30 _1=70, GPU_CORE_UTILIZATION_POLICY=force,
#     VGPU_SM_STATS=1: a saturating bf16 8192^2 matmul loop (sync every 4, as sm_limit_workload.py)
#     in one thread per device, both at once; iterations/s in 3 windows of 5 s after 5 s warm-up,
#     against the same script without the preload in the same call. PASS per device: median window
#     share within +-3 points of its limit, and the limiter's stats line shows that limit for that
#     device. D2: CUDA_VISIBLE_DEVICES=1 and CUDA_DEVICE_SM_LIMIT_0=30 (a pod given GPU 1 alone),
#     against the native run's GPU 1; when D's limited run got CUPTI kernel records, D2 must get
#     some too (CUPTI's deviceId has to land on the remapped ordinal's limiter state).
#
# Environment: MG_PARTS (default "A B C D"), MG_BUDGET_S (530), MG_D_WINDOW (5), MG_D_REPS (3),
# MG_D_WARMUP (5), MG_D_TOL (3), VGPU_LIBRARY / VGPU_BIN (default .devbuild/libvgpu.so, .devbuild/vgpu),
# PYTHON (python3).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/vgpu-multigpu}
PY=${PYTHON:-python3}
HELPER=$HERE/multigpu_workloads.py
BUDGET=${MG_BUDGET_S:-530}
PARTS=${MG_PARTS:-A B C D}
D_WIN=${MG_D_WINDOW:-5}
D_REPS=${MG_D_REPS:-3}
D_WARM=${MG_D_WARMUP:-5}
D_TOL=${MG_D_TOL:-3}
LIB=${VGPU_LIBRARY:-$ROOT/.devbuild/libvgpu.so}
VGPU=${VGPU_BIN:-$ROOT/.devbuild/vgpu}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/vgpu-mg.XXXXXX)
LOG=$W/logs
mkdir -p "$LOG"
RESULTS=$W/results.txt
: >"$RESULTS"

# A clean environment: no limit or preload inherited from the caller.
unset LD_PRELOAD CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES CUDA_DEVICE_MEMORY_SHARED_CACHE \
  GPU_CORE_UTILIZATION_POLICY VGPU_SM_STATS PYTORCH_CUDA_ALLOC_CONF LIBCUDA_LOG_LEVEL
for v in $(compgen -e); do
  case $v in CUDA_DEVICE_MEMORY_LIMIT* | CUDA_DEVICE_SM_LIMIT*) unset "$v" ;; esac
done
# CUDA ordinals in PCI order = nvidia-smi's indices (CUDA_VISIBLE_DEVICES=1 is nvidia-smi's GPU 1).
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 CUDA_DEVICE_ORDER=PCI_BUS_ID

part() { [[ " $PARTS " == *" $1 "* ]]; }
result() { echo "RESULT $1 $2 $3" | tee -a "$RESULTS"; }

FINISHED=0
finish() {
  [ "$FINISHED" = 1 ] && return
  FINISHED=1
  {
    echo
    echo "== multi-GPU results (issue 23) — $(tr '\n' ';' 2>/dev/null <"$W/gpus.txt" | sed 's/;$//'), ${SECONDS} s"
    printf '%-7s %-5s %s\n' part result numbers
    awk '$1=="RESULT" { s=$0; sub(/^RESULT [^ ]+ [^ ]+ /, "", s); printf "%-7s %-5s %s\n", $2, $3, s }' "$RESULTS"
    awk '$1=="RESULT" { n[$3]++ } END { printf "%d passed, %d failed, %d skipped\n", n["PASS"], n["FAIL"], n["SKIP"] }' "$RESULTS"
  } | tee "$OUT/multigpu_summary.txt"
  cp "$RESULTS" "$LOG/" 2>/dev/null
  tar -C "$W" -czf "$OUT/multigpu_logs.tar.gz" logs 2>/dev/null
  rm -rf "$W"
}
trap finish EXIT
trap 'echo "interrupted"; exit 143' INT TERM

# step NAME TAGS TIMEOUT CMD...: runs CMD with a timeout (cut to what is left of the budget), logs
# its output to logs/NAME.log, shows its INFO/NOTE/RESULT lines, and records a FAIL for every tag in
# TAGS (comma-separated, may be empty) that printed no RESULT line (crash, timeout). Returns CMD's
# status, or 200 (tags recorded SKIP) when the budget has no room left for it.
step() {
  local name=$1 tags=$2 tmo=$3
  shift 3
  local left=$((BUDGET - SECONDS - 10)) t0=$SECONDS rc t line why missing=0
  if [ "$left" -lt 30 ]; then
    for t in ${tags//,/ }; do result "$t" SKIP "no time left in the ${BUDGET}-s budget"; done
    echo "-- $name skipped: no time left"
    return 200
  fi
  [ "$tmo" -gt "$left" ] && tmo=$left
  echo "-- $name (timeout ${tmo} s)"
  timeout -k 5 "$tmo" "$@" >"$LOG/$name.log" 2>&1
  rc=$?
  grep -E '^(INFO|NOTE)' "$LOG/$name.log" | cut -c1-400
  why="rc=$rc"
  { [ $rc = 124 ] || [ $rc = 137 ]; } && why="timed out after ${tmo} s"
  for t in ${tags//,/ }; do
    line=$(awk -v t="$t" '$1=="RESULT" && $2==t' "$LOG/$name.log" | tail -1)
    if [ -n "$line" ]; then
      echo "$line" | tee -a "$RESULTS"
    else
      result "$t" FAIL "no result ($why); last line: $(grep -v '^[[:space:]]*$' "$LOG/$name.log" | tail -1 | cut -c1-200)"
      missing=1
    fi
  done
  # A crash or a timeout (not a check that failed): show how it ended.
  if [ $missing = 1 ] || { [ -z "$tags" ] && [ $rc != 0 ]; }; then
    tail -n 8 "$LOG/$name.log" | sed 's/^/    | /' | cut -c1-300
  fi
  echo "   ($name: $why, $((SECONDS - t0)) s)"
  return $rc
}

skip_all() {
  local why=$1 t
  for t in A1 A1.smi A2 A2.smi B1 B1.smi B2 B3 C1 C2 D D2; do result "$t" SKIP "$why"; done
  exit 0
}

echo "== preflight"
[ -f "$LIB" ] || skip_all "no $LIB (run bench/gpu/prepare_devbuild.sh and carry .devbuild)"
command -v nvidia-smi >/dev/null || skip_all "no nvidia-smi on this machine"
timeout 30 nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv,noheader \
  >"$W/smi.txt" 2>"$LOG/smi.err" || skip_all "nvidia-smi failed: $(head -c 200 "$LOG/smi.err")"
cat "$W/smi.txt"
NGPU=$(grep -c . "$W/smi.txt")
[ "$NGPU" -ge 2 ] || skip_all "needs 2 GPUs, found $NGPU"
U0=$(awk -F', *' '$1==0 {print $2}' "$W/smi.txt")
U1=$(awk -F', *' '$1==1 {print $2}' "$W/smi.txt")
awk -F', *' '{print $3}' "$W/smi.txt" | sort | uniq -c | sed 's/^ *//' >"$W/gpus.txt"
timeout 90 "$PY" -c "
import torch
n = torch.cuda.device_count()
nccl = '.'.join(map(str, torch.cuda.nccl.version())) if n else '-'
print('torch %s, CUDA %s, %d devices, NCCL %s' % (torch.__version__, torch.version.cuda, n, nccl))
assert n >= 2, 'torch sees %d CUDA devices' % n
" >"$LOG/torch.txt" 2>&1 || skip_all "torch not usable: $(tail -1 "$LOG/torch.txt" | cut -c1-200)"
cat "$LOG/torch.txt"
VGPU_VERSION=missing
[ -x "$VGPU" ] && VGPU_VERSION=$(timeout 10 "$VGPU" version 2>&1 | head -1)
echo "library $LIB ($(md5sum <"$LIB" | cut -c1-12)); vgpu $VGPU: $VGPU_VERSION"
echo "other compute processes: $(timeout 20 nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader | tr '\n' ';')"
mkdir -p /tmp/vgpulock && chmod 1777 /tmp/vgpulock 2>/dev/null

# pre NAME: PRE = the environment of a preloaded "container" with a fresh region file.
pre() {
  rm -f "$W/$1.cache"
  PRE=("LD_PRELOAD=$LIB" "CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/$1.cache")
}

if part A; then
  echo "== A: per-device memory limits in one process"
  pre a1
  step A1 A1,A1.smi 90 env "${PRE[@]}" CUDA_DEVICE_MEMORY_LIMIT_0=8g CUDA_DEVICE_MEMORY_LIMIT_1=16g \
    "$PY" "$HELPER" alloc --tag A1 --limits-mib 8192,16384 --uuids "$U0,$U1" --smi
  pre a2
  step A2 A2,A2.smi 90 env "${PRE[@]}" CUDA_DEVICE_MEMORY_LIMIT_0=16384m CUDA_DEVICE_MEMORY_LIMIT_1=8192m \
    "$PY" "$HELPER" alloc --tag A2 --limits-mib 16384,8192 --uuids "$U0,$U1" --smi
fi

if part B; then
  echo "== B: a container given the node's GPU 1 (limit _0 = its device 0)"
  pre b1
  step B1 B1,B1.smi 60 env "${PRE[@]}" CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_MEMORY_LIMIT_0=6g \
    CUDA_DEVICE_MEMORY_LIMIT_1=12g \
    "$PY" "$HELPER" alloc --tag B1 --limits-mib 6144 --uuids "$U1" --absent "$U0" --smi
  if [ -x "$VGPU" ]; then
    step B2 B2 60 env VGPU_LIBRARY="$LIB" TMPDIR="$W" "$VGPU" run --gpus 1 --gpumem 6144 -- \
      "$PY" "$HELPER" alloc --tag B2 --limits-mib 6144 --uuids "$U1" --absent "$U0"
  else
    result B2 SKIP "no $VGPU"
  fi
  pre b3
  step B3 B3 60 env "${PRE[@]}" CUDA_VISIBLE_DEVICES="$U1" NVIDIA_VISIBLE_DEVICES="$U1" \
    CUDA_DEVICE_MEMORY_LIMIT_0=6g \
    "$PY" "$HELPER" alloc --tag B3 --limits-mib 6144 --uuids "$U1" --absent "$U0"
fi

if part C; then
  echo "== C1: NCCL all_reduce, one pod granted both GPUs, 4 GiB each"
  step C1 C1 120 "$PY" "$HELPER" nccl --tag C1 --lib "$LIB" --cache "$W/c1.cache" --out "$LOG/c1" \
    --limits-mib 4096,4096 --tensor-mib 256 --timeout 100
fi

# sm_report TAG LIMITED_STEP ARGS...: the verdict of a limited run against the native one.
sm_report() {
  local tag=$1 limited=$2
  shift 2
  if [ "$D_NATIVE_RC" = 200 ] || [ "$D_LIMITED_RC" = 200 ]; then
    result "$tag" SKIP "no time left in the ${BUDGET}-s budget"
    return
  fi
  timeout 60 "$PY" "$HELPER" sm-report --tag "$tag" --native "$LOG/d_native.json" \
    --limited "$LOG/$limited.json" --stats "$LOG/$limited.log" --tol "$D_TOL" "$@" \
    >"$LOG/$tag.report.log" 2>&1
  grep -E '^(INFO|NOTE)' "$LOG/$tag.report.log"
  line=$(awk -v t="$tag" '$1=="RESULT" && $2==t' "$LOG/$tag.report.log" | tail -1)
  if [ -n "$line" ]; then echo "$line" | tee -a "$RESULTS"; else
    result "$tag" FAIL "report failed: $(tail -1 "$LOG/$tag.report.log" | cut -c1-200)"
  fi
}

if part D; then
  echo "== D: SM limits 30 / 70 on the two devices of one process (native reference first)"
  DARGS=(--warmup "$D_WARM" --window "$D_WIN" --reps "$D_REPS")
  step d_native "" 90 "$PY" "$HELPER" sm --devices 0,1 "${DARGS[@]}" --out "$LOG/d_native.json"
  D_NATIVE_RC=$?
  pre d
  step d_limited "" 90 env "${PRE[@]}" CUDA_DEVICE_SM_LIMIT_0=30 CUDA_DEVICE_SM_LIMIT_1=70 \
    GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1 \
    "$PY" "$HELPER" sm --devices 0,1 "${DARGS[@]}" --out "$LOG/d_limited.json"
  D_LIMITED_RC=$?
  sm_report D d_limited --limits 30,70 --devices 0,1
  echo "== D2: a pod given GPU 1 alone, CUDA_DEVICE_SM_LIMIT_0=30"
  pre d2
  step d2_limited "" 90 env "${PRE[@]}" CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_SM_LIMIT_0=30 \
    GPU_CORE_UTILIZATION_POLICY=force VGPU_SM_STATS=1 \
    "$PY" "$HELPER" sm --devices 0 "${DARGS[@]}" --out "$LOG/d2_limited.json"
  D_LIMITED_RC=$?
  sm_report D2 d2_limited --limits 30 --devices 0 --native-devices 1 \
    --records-ref "$LOG/d_limited.log"
fi

if part C; then
  echo "== C2: NCCL under limits too small for its buffers (expect OOM, not a silent overrun)"
  step C2 C2 90 "$PY" "$HELPER" nccl --tag C2 --lib "$LIB" --cache "$W/c2.cache" --out "$LOG/c2" \
    --negative-from "$LOG/c1.json" --margin-mib 50 --tensor-mib 256 --timeout 75 --grace 15 \
    --pg-timeout 30
fi

echo "== done in ${SECONDS} s"
FAILS=$(grep -c '^RESULT [^ ]* FAIL' "$RESULTS")
finish
[ "$FAILS" = 0 ]
