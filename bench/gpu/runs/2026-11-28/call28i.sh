#!/bin/bash
# Issue 18: after a calibration window counts as confirming unless it finds the scale in use
# undercharged (calibration.h ScaleHolds): do the windows of a steady launch loop space out on the
# real GPU? The launch loop alone at 90 for 40 s, then one batch of whole processes taking turns
# (ovh_turns.py, as call28g.sh). Its stats lines: attaches, windows, moved, rescaled.
#   bash bench/gpu/runs/2026-11-28/call28i.sh   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
LIB=$PWD/.devbuild/libvgpu.so
O=/tmp/i; mkdir -p $O
rm -rf /tmp/vgpulock; mkdir -p /tmp/vgpulock; chmod 1777 /tmp/vgpulock
taskset -c 8-11 env LD_PRELOAD=$LIB CUDA_DEVICE_SM_LIMIT=90 GPU_CORE_UTILIZATION_POLICY=force \
  CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/i_small.cache VGPU_SM_STATS=1 \
  python3 bench/gpu/sm_workloads.py small --warmup 3 --window 40 >$O/small_l90.json 2>$O/small_l90.err
python3 -c "import json,sys; r=json.loads(open('$O/small_l90.json').read().strip().splitlines()[-1]); print('small_l90 rate', r['rate'])"
grep -a 'sm-limit\]' $O/small_l90.err | cut -c1-520
T=/tmp/turns; mkdir -p $T
python3 bench/gpu/ovh_turns.py run small $T --lib "$LIB" --pin 8-11 --limit 90 --slice-s 0.5 \
  --rounds 24 --warmup-s 5 --budget-s 100 --seed 61 --startup-s 8 | grep -v "^  turns"
for f in "$T"/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-520)"; done
tar czf "$OUT/turns.tgz" -C /tmp turns i
date -u
