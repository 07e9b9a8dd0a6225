#!/bin/bash
# Builds, beside .devbuild/libvgpu.so, a probe build of HEAD's libvgpu (release flags as
# prepare_devbuild.sh; never part of the product) whose measuring thread is quieter while nothing
# binds: a pass every 32 ms instead of 8 (kDetachedTickNs) and, while launches coast, a stream's
# periodic end mark every 16 ms instead of 4 (kCoastingMarkIntervalNs). Into .devbuild/quiet/.
#   bash bench/gpu/runs/2026-11-29/build_quiet.sh
set -eu
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
SRC=/tmp/vgpu-quiet/src
rm -rf "$SRC" && mkdir -p "$SRC"
git -C "$ROOT" archive HEAD | tar -x -C "$SRC"
sed -i 's/^constexpr int64_t kDetachedTickNs = 8.000.000;/constexpr int64_t kDetachedTickNs = 32'"'"'000'"'"'000;/' \
  "$SRC/libvgpu/src/sm/sampler.cpp"
sed -i 's/^constexpr int64_t kCoastingMarkIntervalNs = 4.000.000;/constexpr int64_t kCoastingMarkIntervalNs = 16'"'"'000'"'"'000;/' \
  "$SRC/libvgpu/src/sm/event_marks.h"
grep -q "kDetachedTickNs = 32'000'000" "$SRC/libvgpu/src/sm/sampler.cpp"
grep -q "kCoastingMarkIntervalNs = 16'000'000" "$SRC/libvgpu/src/sm/event_marks.h"
"$ROOT/bench/gpu/build_probe.sh" "$SRC" /tmp/vgpu-quiet/b "$ROOT/.devbuild/quiet/libvgpu.so"
ls -la "$ROOT/.devbuild/quiet"
