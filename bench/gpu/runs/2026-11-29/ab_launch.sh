#!/bin/bash
# Issue 18, acceptance 6 on the launch loop: is the +2.6 % of a limit that does not bind (library
# of ac813ce, the seventh session's calls y and z2) a change since 6fca53f (+1.2 %, 108 rounds) or
# the hosts? Both libraries in the same turns: ovh_turns.py on the launch loop, l90 = HEAD's
# library, l90b = 6fca53f's, whole processes taking turns on one vCPU, ~7 min.
#   here:   bash bench/gpu/prepare_devbuild.sh && bash bench/gpu/runs/2026-11-29/ab_launch.sh build
#   device: bash bench/gpu/runs/2026-11-29/ab_launch.sh [BUDGET_S]   (`.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
if [ "${1:-}" = build ]; then  # 6fca53f's libvgpu.so into .devbuild/old/
  set -e
  S=/tmp/vgpu-old-6fca53f
  rm -rf "$S" && mkdir -p "$S/src"
  git archive 6fca53f | tar -x -C "$S/src"
  cmake -S "$S/src" -B "$S/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DVGPU_COMPONENTS="libvgpu;cli;core;base" >/dev/null
  cmake --build "$S/build" -j2 --target vgpu_preload >/dev/null
  mkdir -p .devbuild/old && cp "$S/build/lib/libvgpu.so" .devbuild/old/
  exit 0
fi
taskset -cp 0-3 $$ >/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader
date -u
T=/tmp/ab_launch
mkdir -p $T/small
python3 bench/gpu/ovh_turns.py run small $T/small --lib "$PWD/.devbuild/libvgpu.so" \
  --lib2 "$PWD/.devbuild/old/libvgpu.so" --pin 8-11 --one-cpu 8 --limit 90 --slice-s 0.5 \
  --rounds 16 --warmup-s 5 --budget-s "${1:-380}" --seed 301 --startup-s 8 | grep -v "^  turns"
date -u
for f in "$T"/small/turns_*_l90*.err; do
  echo "$f $(grep -a 'sm-limit\]' "$f" | tail -1 | grep -o 'launches=[0-9]*\|coasted=[0-9]*\|windows=[0-9]*\|attached_ms=[0-9.]*\|passes=[0-9]*\|measuring_cpu_ms=[0-9.]*' | tr '\n' ' ')"
done
python3 bench/gpu/ovh_turns.py report $T/small | tee $T/small/report.txt
tar czf "$OUT/ab_launch.tgz" --exclude="*.cache" -C /tmp ab_launch
