#!/usr/bin/env bash
# Real-GPU benchmark of the MPS sharing mode (issue 44; docs/gpu-results.md, "MPS mode"): the same
# training and inference tenants as sm_v2_bench.sh (sm_workloads.py), started together and
# measured over one window, in four ways, in the same invocation, REPS rounds (order rotating):
#   native   no libvgpu, no MPS (the pair/alone runs take turns as the driver time-slices them)
#   ts       libvgpu time-slice limits (CUDA_DEVICE_SM_LIMIT, policy force)
#   mps      plain NVIDIA MPS: a control daemon, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE per tenant
#   vmps     `vgpu run --mode mps --gpucores P --gpumem M` on the same daemon (libvgpu enforces
#            memory, MPS partitions the SMs, no time-slicing)
# Groups: pair (two `train` at 50+50), alone (one `train` at 50), infer (infer-open at INFER_RATE
# beside `train`, 50+50). Prints median [min-max] per group and tenant and the acceptance checks.
#   LIBVGPU=.devbuild/after/libvgpu.so VGPU=.devbuild/after/vgpu bench/gpu/mps_bench.sh
# Environment: OUT (default /tmp/vgpu-mps-bench), REPS (2), WARM (14 s), WIN (8 s), INFER_RATE
# (50 requests/s), GPUMEM (MiB per tenant in ts/vmps, 20000), MPS_GROUPS (default all: "native_pair
# ts_pair mps_pair vmps_pair mps_alone vmps_alone mps_infer vmps_infer"), DRY_RUN=1 (print only).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/vgpu-mps-bench}
REPS=${REPS:-2}
WARM=${WARM:-14}
WIN=${WIN:-8}
INFER_RATE=${INFER_RATE:-50}
GPUMEM=${GPUMEM:-20000}
LIBVGPU=$(realpath "${LIBVGPU:-.devbuild/libvgpu.so}")
VGPU=$(realpath "${VGPU:-.devbuild/vgpu}")
GROUPS_RUN=${MPS_GROUPS:-"native_pair ts_pair mps_pair vmps_pair mps_alone vmps_alone mps_infer vmps_infer"}
PIPE=$OUT/mps/pipe
mkdir -p "$OUT/raw" "$OUT/mps/log" "$PIPE"
chmod 700 "$OUT/mps" "$PIPE" "$OUT/mps/log"
unset LD_PRELOAD CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
export PYTHONUNBUFFERED=1 VGPU_LIBRARY=$LIBVGPU


# tenant NAME MODE KIND: starts one tenant of the current window in mode MODE.
tenant() {
  local name=$1 mode=$2 kind=$3 args=()
  [ "$kind" = infer-open ] && args=(--rate "$INFER_RATE")
  local cmd=(python3 "$HERE/sm_workloads.py" "$kind" "${args[@]}")
  local envs=(START_AT=$START_AT END_AT=$END_AT)
  case $mode in
    native) ;;
    ts) envs+=(LD_PRELOAD=$LIBVGPU CUDA_DEVICE_MEMORY_SHARED_CACHE=$OUT/raw/$name.cache
               CUDA_DEVICE_SM_LIMIT=50 CUDA_DEVICE_MEMORY_LIMIT=${GPUMEM}m
               GPU_CORE_UTILIZATION_POLICY=force) ;;
    mps) envs+=(CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50) ;;
    vmps) cmd=("$VGPU" run --mode mps --mps-pipe "$PIPE" --gpucores 50 --gpumem "$GPUMEM" -- "${cmd[@]}") ;;
  esac
  if [ "${DRY_RUN:-0}" = 1 ]; then echo "  $name: env ${envs[*]} ${cmd[*]}"; return; fi
  env "${envs[@]}" "${cmd[@]}" >"$OUT/raw/$name.json" 2>"$OUT/raw/$name.err" &
}

window() {  # window GROUP ROUND
  local group=$1 r=$2 mode=${1%%_*} shape=${1#*_}
  START_AT=$(python3 -c "import time; print(round(time.time() + $WARM, 3))")
  END_AT=$(python3 -c "print(round($START_AT + $WIN, 3))")
  case $shape in
    pair) tenant "$group.r$r.0" "$mode" train; tenant "$group.r$r.1" "$mode" train ;;
    alone) tenant "$group.r$r.0" "$mode" train ;;
    infer) tenant "$group.r$r.0" "$mode" infer-open; tenant "$group.r$r.1" "$mode" train ;;
  esac
  [ "${DRY_RUN:-0}" = 1 ] || wait
}

if [ "${DRY_RUN:-0}" != 1 ]; then
  # The plain-MPS daemon, also the one `vgpu run --mode mps --mps-pipe` finds (and would start).
  CUDA_MPS_PIPE_DIRECTORY=$PIPE CUDA_MPS_LOG_DIRECTORY=$OUT/mps/log nvidia-cuda-mps-control -d ||
    { echo "nvidia-cuda-mps-control -d failed"; exit 1; }
  trap 'echo quit | CUDA_MPS_PIPE_DIRECTORY=$PIPE nvidia-cuda-mps-control' EXIT
fi
read -r -a groups <<<"$GROUPS_RUN"
for r in $(seq 1 "$REPS"); do
  n=${#groups[@]}
  for i in $(seq 0 $((n - 1))); do
    g=${groups[$(((i + r - 1) % n))]}
    echo "round $r: $g"
    window "$g" "$r"
  done
done
[ "${DRY_RUN:-0}" = 1 ] && exit 0
python3 "$HERE/mps_report.py" "$OUT/raw"
