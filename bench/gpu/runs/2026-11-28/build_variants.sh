#!/bin/bash
# Builds, beside .devbuild/libvgpu.so, five probe variants of libvgpu's limited launch path from
# d89f467 (the library of the evening's and night's `l90`; VARIANTS_BASE to change it) with
# hotpath_variants.patch (a compile-time VGPU_HOTPATH; never part of the product):
#   0  as HEAD
#   1  no cuCtxGetDevice per launch (device 0)
#   2  1, and the after-launch hook stops after counting the launch (no stream bookkeeping, no
#      event marks, so nothing for the measuring thread to poll)
#   3  1, and the before-launch hook returns once it found the device limited (no clock, no
#      budget or turn check, no marks)
#   4  as 0, but never waits for budget: with VGPU_CUPTI_LIBRARY=off, the limited path, the
#      measuring thread and its events without CUPTI ever attached (events alone would bind at 90)
# into .devbuild/var/libvgpu-N.so (release flags as prepare_devbuild.sh).
set -eu
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
SRC=/tmp/vgpu-var/src
rm -rf "$SRC" && mkdir -p "$SRC"
git -C "$ROOT" archive "${VARIANTS_BASE:-d89f467}" | tar -x -C "$SRC"
patch -s -d "$SRC" -p1 <"$ROOT/bench/gpu/runs/2026-11-28/hotpath_variants.patch"
mkdir -p "$ROOT/.devbuild/var"
for n in 0 1 2 3 4; do
  cmake -S "$SRC" -B /tmp/vgpu-var/b$n -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG -DVGPU_HOTPATH=$n" -DVGPU_COMPONENTS="libvgpu;core;base" \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
  cmake --build /tmp/vgpu-var/b$n -j2 --target vgpu_preload >/dev/null
  cp /tmp/vgpu-var/b$n/lib/libvgpu.so "$ROOT/.devbuild/var/libvgpu-$n.so"
done
ls -la "$ROOT/.devbuild/var"
