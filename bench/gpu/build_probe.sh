#!/bin/bash
# Builds libvgpu.so from a source tree the way prepare_devbuild.sh builds the product's (release,
# -O2, libstdc++ linked in) into BUILD_DIR and copies it to DEST: the probe builds of the run
# folders (a patch or an edit on some commit, never part of the product) use it.
#   bench/gpu/build_probe.sh SRC_DIR BUILD_DIR DEST [EXTRA_CXX_FLAGS]
set -eu
[ $# -ge 3 ] || { echo "usage: $0 SRC_DIR BUILD_DIR DEST [EXTRA_CXX_FLAGS]" >&2; exit 2; }
src=$1 build=$2 dest=$3 extra=${4:-}
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG${extra:+ $extra}" -DVGPU_COMPONENTS="libvgpu;core;base" \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
cmake --build "$build" -j2 --target vgpu_preload >/dev/null
mkdir -p "$(dirname "$dest")"
cp "$build/lib/libvgpu.so" "$dest"
