#!/bin/bash
# Issue 18, acceptance 6 on the launch loop: ab_launch.sh of 2026-11-29 (HEAD's library l90 beside
# 6fca53f's l90b in the same turns) with a sixth process, l90ev: HEAD's library at the same limit
# with CUDA events only (VGPU_CUPTI_LIBRARY=off), which tells CUPTI's part of the cost from the
# rest of the limiter's. ~8 min.
#   here:   bash bench/gpu/prepare_devbuild.sh && bash bench/gpu/runs/2026-11-29/ab_launch.sh build
#   device: bash bench/gpu/runs/2026-11-30/call30a.sh [BUDGET_S]   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/call30a
mkdir -p $T/small
python3 bench/gpu/ovh_turns.py run small $T/small --lib "$PWD/.devbuild/libvgpu.so" \
  --lib2 "$PWD/.devbuild/old/libvgpu.so" --events-config --pin 8-11 --one-cpu 8 --limit 90 \
  --slice-s 0.5 --rounds 16 --warmup-s 5 --budget-s "${1:-430}" --seed 302 --startup-s 8 |
  grep -v "^  turns"
date -u
for f in "$T"/small/turns_*_l90*.err; do
  echo "$f $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'launches=[0-9]*\|coasted=[0-9]*\|records=[0-9]*\|windows=[0-9]*\|attached_ms=[0-9.]*\|passes=[0-9]*\|measuring_cpu_ms=[0-9.]*' | tr '\n' ' ')"
done
python3 bench/gpu/ovh_turns.py report $T/small | tee $T/small/report.txt
tar czf "$OUT/call30a.tgz" --exclude="*.cache" -C /tmp call30a
