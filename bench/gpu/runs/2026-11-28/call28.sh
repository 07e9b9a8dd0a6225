#!/bin/bash
# Issue 18, acceptance 6: overhead as whole processes, pinned, fixed work, many short rounds.
#   bash bench/gpu/runs/2026-11-28/call28.sh SEED SMALL_BUDGET_S TRAIN_BUDGET_S
# One device call, run from the repository root with `.devbuild` carried (libvgpu.so from
# bench/gpu/prepare_devbuild.sh); ran once as `call28.sh 1 190 250` (call A). Several calls' rounds
# can be pooled afterwards (`python3 bench/gpu/sm_v2_report.py ovh-ci DIR...`) if SEED differs.
# Design (sm_v2_bench.sh's overhead parts with the new options):
# - every measured process pinned to the same 4 cores (OVH_PIN=8-11); this script and its
#   helpers to cores 0-3, so nothing else runs there;
# - each process starts whole (python3 + torch + CUDA, LD_PRELOAD as a pod gets it), runs its
#   first two units, WARM s more, then a fixed amount of work sized by a native probe of this call
#   (launch loop ~2 s, training loop ~4 s: whole periods of the limiter's 2-s record windows);
# - rounds of native, native2 (A/A control), preload (libvgpu, no limit), l90 (gpucores 90,
#   policy force, not binding), in a fresh random order each round, until the part's time budget.
cd "$(dirname "$0")/../../../.." || exit 1
SEED=${1:-1} SB=${2:-200} TB=${3:-260}
R=$OUT
PIN=8-11
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u; nproc; uname -r
lscpu | grep -E "^(Model name|Thread|Core|Socket|NUMA node)" | tr -s ' '
for c in 8 9 10 11; do printf 'cpu%s siblings %s; ' $c "$(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)"; done; echo
python3 -c 'import torch; print("torch", torch.__version__)'
LIB=$PWD/.devbuild/libvgpu.so
ls -la "$LIB" || exit 1
W=bench/gpu/sm_workloads.py
# Probes (also warm the page cache): the native rates on the pinned cores size the fixed work.
ps=$(taskset -c $PIN python3 $W small --units 400 --warmup 1.5 2>/tmp/probe_s.err)
pt=$(taskset -c $PIN python3 $W train --units 24 --warmup 2 2>/tmp/probe_t.err)
NS=$(python3 -c 'import json,sys; print(max(100, round(json.loads(sys.argv[1])["rate"] * 2 / 200)))' "${ps##*$'\n'}")
NT=$(python3 -c 'import json,sys; print(max(20, round(json.loads(sys.argv[1])["rate"] * 4)))' "${pt##*$'\n'}")
echo "probe small: $(echo "${ps##*$'\n'}" | cut -c1-160)"
echo "probe train: $(echo "${pt##*$'\n'}" | cut -c1-160)"
echo "fixed work: small $NS units (x200 launches), train $NT steps; seed $SEED, budgets $SB / $TB s"
if [ -z "$NS" ] || [ -z "$NT" ]; then echo "probe failed"; tail -5 /tmp/probe_*.err; exit 1; fi
date -u
O=/tmp/ovh$SEED
export OUT=$O FRESH=1 NVML=0 LIBVGPU=$LIB OVH_AA=1 OVH_PIN=$PIN OVH_ORDER=random OVH_SEED=$SEED \
  OVH_ROUNDS=99 OVH_LIMIT=90 OVH_SMALL_UNITS=$NS OVH_TRAIN_UNITS=$NT
WARM=1.5 OVH_BUDGET_S=$SB PARTS=overhead-small bash bench/gpu/sm_v2_bench.sh >/tmp/ovs.log 2>&1
date -u
FRESH=0 WARM=2 OVH_BUDGET_S=$TB PARTS=overhead-train bash bench/gpu/sm_v2_bench.sh >/tmp/ovt.log 2>&1
date -u
grep -E "round budget|!!" /tmp/ovs.log /tmp/ovt.log
python3 bench/gpu/sm_v2_report.py ovh-ci "$O" | tee "$O/ovh_ci.txt"
for f in "$O"/raw/ovh_*_l90.r1.0.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-250)"; done
cp /tmp/ovs.log /tmp/ovt.log /tmp/probe_*.err "$O/" 2>/dev/null
tar czf "$R/ovh$SEED.tgz" -C /tmp "ovh$SEED"
date -u
