#!/usr/bin/env bash
# Builds the container images the Helm chart runs (charts/vgpu): vgpu/device-plugin,
# vgpu/scheduler and vgpu/monitor, tag = the chart's appVersion, without a container engine.
#
#   scripts/build-images.sh [options] [OUT]      (OUT: default build/images)
#
# 1. A release build (-O2, as the `release` preset) of vgpu-device-plugin,
#    vgpu-scheduler, vgpu-monitor, vgpu and libvgpu.so in --build-dir (default
#    build/images-release), unless --binaries names binaries already built.
# 2. scripts/oci-image.py writes OUT/<image>.tar per image: an OCI image layout in a tar, with a
#    docker-archive manifest.json, one layer holding the binaries and the Debian libraries they load
#    (ldd), the loader and glibc included, with those packages' dpkg records and copyright files,
#    /etc/os-release and vgpu's LICENSE, for scanners and licence reviews. Import on a node with
#      ctr -n k8s.io images import OUT/scheduler.tar    (or: docker load -i OUT/scheduler.tar)
#    Same binaries and SOURCE_DATE_EPOCH give the same digests (docs/install.md, "Images").
#
# Options:
#   --binaries DIR   use these binaries, build nothing: a folder holding vgpu-device-plugin,
#                    vgpu-scheduler, vgpu-monitor, vgpu and libvgpu.so, or a CMake build folder
#                    (e.g. build/dev: deviceplugin/, scheduler/, monitor/, cli/, lib/)
#   --build-dir DIR  the release build folder (default build/images-release)
#   --only IMAGE     device-plugin, scheduler or monitor (repeatable; default all three)
#   --registry HOST  name the images HOST/vgpu/... (as global.imageRegistry in the chart); default
#                    localhost, the chart's default: images imported into the nodes, a name no one
#                    else can publish under (docs/install.md, "Images")
#   --rootfs DIR     also write each image's files as DIR/<image>/ (deploy/images/Dockerfile)
#   --no-strip       keep symbols (binaries are stripped by default)
# Environment: SOURCE_DATE_EPOCH (file times and `created`; default: the commit time of HEAD),
# JOBS (build parallelism, default nproc).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
out=$ROOT/build/images
build_dir=$ROOT/build/images-release
binaries=""
pass=()

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while (($#)); do
  case $1 in
    --binaries) binaries=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --only | --registry | --rootfs) pass+=("$1" "$2"); shift 2 ;;
    --no-strip) pass+=("$1"); shift ;;
    -h | --help) usage 0 ;;
    -*) echo "build-images: unknown option $1" >&2; usage 2 >&2 ;;
    *) out=$1; shift ;;
  esac
done

tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$ROOT/charts/vgpu/Chart.yaml")
if [[ -z $tag ]]; then
  echo "build-images: no appVersion in charts/vgpu/Chart.yaml" >&2
  exit 1
fi
revision=${VGPU_REVISION:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)}
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}

if [[ -z $binaries ]]; then
  # Release flags as the preset. libstdc++ stays shared: the Debian libraries the binaries load
  # (yaml-cpp, cpp-httplib, gRPC) need libstdc++.so.6 in the image anyway, and one C++ runtime per
  # process is safer than a static copy beside the shared one.
  cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_EXE_LINKER_FLAGS="" >/dev/null
  cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" \
    --target vgpu-device-plugin vgpu-scheduler vgpu-monitor vgpu vgpu_preload
  binaries=$build_dir
fi

# A flat folder of the five files, from either layout.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in deviceplugin/vgpu-device-plugin scheduler/vgpu-scheduler monitor/vgpu-monitor cli/vgpu \
  lib/libvgpu.so; do
  name=${f##*/}
  for candidate in "$binaries/$name" "$binaries/$f"; do
    if [[ -f $candidate ]]; then
      ln -s "$(cd "$(dirname "$candidate")" && pwd)/$name" "$stage/$name"
      break
    fi
  done
done

python3 "$ROOT/scripts/oci-image.py" --binaries "$stage" --out "$out" --tag "$tag" \
  --epoch "$epoch" --revision "$revision" "${pass[@]}"
