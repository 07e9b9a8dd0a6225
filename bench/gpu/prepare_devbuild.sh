#!/bin/bash
# Builds libvgpu.so and the `vgpu` binary (release) from the committed tree into .devbuild/ (git-
# ignored), to be carried to a GPU machine that lacks the build dependencies (run_all.sh uses it).
# With VGPU_DEVBUILD_MONITOR=1 also, in .devbuild/monitor/, `vgpu-monitor` and a `vgpu` with
# `vgpu top`, and in .devbuild/monitor/lib the shared libraries they need beyond glibc (the GPU
# image has no cpp-httplib, yaml-cpp or this libcurl; run them with LD_LIBRARY_PATH pointing there,
# never a framework: PyTorch needs the image's own libstdc++). The plain `vgpu` stays free of them.
# Incremental: the exported tree and its builds stay in ${VGPU_DEVBUILD_DIR:-/tmp/vgpu-devbuild}.
# Another commit (an A/B of two builds, bench/gpu/sm_v2_bench.sh LIBVGPU_PREV): VGPU_DEVBUILD_REV
# (default HEAD) with its own VGPU_DEVBUILD_DIR and VGPU_DEVBUILD_DEST (default .devbuild, under the
# repository), e.g.
#   VGPU_DEVBUILD_REV=main VGPU_DEVBUILD_DIR=/tmp/vgpu-devbuild-main VGPU_DEVBUILD_DEST=.devbuild/prev \
#     bench/gpu/prepare_devbuild.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${VGPU_DEVBUILD_DIR:-/tmp/vgpu-devbuild}
mkdir -p "$SRC/src"
REV=${VGPU_DEVBUILD_REV:-HEAD}
DEST=$ROOT/${VGPU_DEVBUILD_DEST:-.devbuild}
git -C "$ROOT" archive "$REV" | tar -x -C "$SRC/src"
build() {  # build DIR COMPONENTS TARGET...
  local dir=$1 components=$2
  shift 2
  cmake -S "$SRC/src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DVGPU_COMPONENTS="$components" \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" >/dev/null
  cmake --build "$dir" -j2 --target "$@" >/dev/null || cmake --build "$dir" -j1 --target "$@"
}
build "$SRC/build" "libvgpu;cli;core;base" vgpu_preload vgpu
mkdir -p "$DEST"
cp "$SRC/build/lib/libvgpu.so" "$SRC/build/cli/vgpu" "$DEST/"
if [ "${VGPU_DEVBUILD_MONITOR:-0}" = 1 ]; then
  # core's subfolders are selected by their own names (codec, prom, monitor).
  build "$SRC/build-monitor" "cli;core;base;net;kube;monitor;codec;prom" vgpu-monitor vgpu
  M=$DEST/monitor
  rm -rf "$M" && mkdir -p "$M/lib"
  cp "$SRC/build-monitor/monitor/vgpu-monitor" "$SRC/build-monitor/cli/vgpu" "$M/"
  # Everything but glibc's own libraries (the GPU image's glibc is newer than Debian 12's).
  ldd "$M/vgpu-monitor" "$M/vgpu" | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv)\.so' | xargs -r cp -L -t "$M/lib"
fi
ls -la "$DEST"
