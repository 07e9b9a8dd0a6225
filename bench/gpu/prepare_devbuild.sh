#!/bin/bash
# Builds libvgpu.so and the `vgpu` binary (release) from the committed tree into .devbuild/ (git-
# ignored), to be carried to a GPU machine that lacks the build dependencies (run_all.sh uses it).
# Incremental: the exported tree and its build stay in ${VGPU_DEVBUILD_DIR:-/tmp/vgpu-devbuild}.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${VGPU_DEVBUILD_DIR:-/tmp/vgpu-devbuild}
mkdir -p "$SRC/src"
git -C "$ROOT" archive HEAD | tar -x -C "$SRC/src"
cmake -S "$SRC/src" -B "$SRC/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DVGPU_COMPONENTS="libvgpu;cli;core;base" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
cmake --build "$SRC/build" -j2 --target vgpu_preload vgpu >/dev/null
mkdir -p "$ROOT/.devbuild"
cp "$SRC/build/lib/libvgpu.so" "$SRC/build/cli/vgpu" "$ROOT/.devbuild/"
ls -la "$ROOT/.devbuild"
