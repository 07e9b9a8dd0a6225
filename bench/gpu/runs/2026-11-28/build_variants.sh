#!/bin/bash
# Builds, beside .devbuild/libvgpu.so, four probe variants of libvgpu's limited launch path from
# HEAD with hotpath_variants.patch (a compile-time VGPU_HOTPATH; never part of the product):
#   0  as HEAD
#   1  no cuCtxGetDevice per launch (device 0)
#   2  1, and the after-launch hook stops after counting the launch (no stream bookkeeping, no
#      event marks, so nothing for the measuring thread to poll)
#   3  1, and the before-launch hook returns once it found the device limited (no clock, no
#      budget or turn check, no marks)
# into .devbuild/var/libvgpu-N.so (release flags as prepare_devbuild.sh).
set -eu
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
SRC=/tmp/vgpu-var/src
rm -rf "$SRC" && mkdir -p "$SRC"
git -C "$ROOT" archive HEAD | tar -x -C "$SRC"
patch -s -d "$SRC" -p1 <"$ROOT/bench/gpu/runs/2026-11-28/hotpath_variants.patch"
mkdir -p "$ROOT/.devbuild/var"
for n in 0 1 2 3; do
  cmake -S "$SRC" -B /tmp/vgpu-var/b$n -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG -DVGPU_HOTPATH=$n" -DVGPU_COMPONENTS="libvgpu;core;base" \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
  cmake --build /tmp/vgpu-var/b$n -j2 --target vgpu_preload >/dev/null
  cp /tmp/vgpu-var/b$n/lib/libvgpu.so "$ROOT/.devbuild/var/libvgpu-$n.so"
done
ls -la "$ROOT/.devbuild/var"
