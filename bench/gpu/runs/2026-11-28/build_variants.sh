#!/bin/bash
# Builds, beside .devbuild/libvgpu.so, probe builds of libvgpu (release flags as
# prepare_devbuild.sh) from a commit with a patch that adds a compile-time switch (never part of the
# product). Two sets:
#   bash build_variants.sh          hotpath_variants.patch on d89f467 (the library of the evening's
#                                   and night's `l90`), VGPU_HOTPATH=N into .devbuild/var/libvgpu-N.so:
#     0  as d89f467
#     1  no cuCtxGetDevice per launch (device 0)
#     2  1, and the after-launch hook stops after counting the launch (no stream bookkeeping, no
#        event marks, so nothing for the measuring thread to poll)
#     3  1, and the before-launch hook returns once it found the device limited (no clock, no
#        budget or turn check, no marks)
#     4  as 0, but never waits for budget: with VGPU_CUPTI_LIBRARY=off, the limited path, the
#        measuring thread and its events without CUPTI ever attached (events alone would bind at 90)
#   bash build_variants.sh probes   probe_switches.patch on HEAD, VGPU_PROBE=N (bits: 1 never wait,
#                                   2 no event marks, 4 no measuring thread, 8 return once the device
#                                   is found limited, 16 no end mark before a sync, 32 no start marks, 64 no
#                                   periodic end marks) for N in PROBES (default 1 3 17 33 65 113), into .devbuild/probe/libvgpu-N.so
# VARIANTS_BASE overrides the commit.
set -eu
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
HERE=$ROOT/bench/gpu/runs/2026-11-28
if [ "${1:-}" = probes ]; then
  base=${VARIANTS_BASE:-HEAD} patch=$HERE/probe_switches.patch macro=VGPU_PROBE out=probe list="${PROBES:-1 3 17 33 65 113}"
else
  base=${VARIANTS_BASE:-d89f467} patch=$HERE/hotpath_variants.patch macro=VGPU_HOTPATH out=var list="0 1 2 3 4"
fi
SRC=/tmp/vgpu-$out/src
rm -rf "$SRC" && mkdir -p "$SRC"
git -C "$ROOT" archive "$base" | tar -x -C "$SRC"
patch -s -d "$SRC" -p1 <"$patch"
for n in $list; do
  "$ROOT/bench/gpu/build_probe.sh" "$SRC" "/tmp/vgpu-$out/b$n" "$ROOT/.devbuild/$out/libvgpu-$n.so" \
    "-D$macro=$n"
done
ls -la "$ROOT/.devbuild/$out"
