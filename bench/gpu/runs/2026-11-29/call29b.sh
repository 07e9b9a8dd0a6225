#!/bin/bash
# Issue 18, acceptance 6: where the limited-but-not-binding process's extra time goes on the
# training loop (~+2.4-3.7 % as whole processes against ~+0.8 % for preload): perf counters per
# thread (perf_counts.py) around each slice of the same turns as ovh_turns.py, training loop then
# launch loop. Instructions per unit do not drift with the host's speed as time does.
#   bash bench/gpu/runs/2026-11-29/call29b.sh   (repository root; `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
LIB=$PWD/.devbuild/libvgpu.so
T=/tmp/counts29b
mkdir -p $T
python3 bench/gpu/perf_counts.py train $T --lib "$LIB" --rounds 12 --batches 3 --seed 293
date -u
python3 bench/gpu/perf_counts.py small $T --lib "$LIB" --rounds 12 --batches 1 --seed 294
date -u
for f in "$T"/counts_*_l90.err; do
  echo "$f $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'launches=[0-9]*\|busy_ms=[0-9.]*\|events=[0-9]*\|coasted=[0-9]*\|passes=[0-9]*\|windows=[0-9]*\|attached_ms=[0-9.]*\|measuring_cpu_ms=[0-9.]*' | tr '\n' ' ')"
done
tar czf "$OUT/counts29b.tgz" --exclude="*.cache" -C /tmp counts29b
