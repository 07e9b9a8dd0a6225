#!/bin/bash
# Builds a trace build of libvgpu at c29d327 (the library call29e and call29g measured; the patch
# fits that commit) into .devbuild/trace/ (release flags as
# prepare_devbuild.sh; never part of the product): trace_probe.patch adds one stderr line
# ("[vgpu trace]") per calibration period (its events, records, ratio, the scale before and
# after), per window opened (and how long enabling or attaching CUPTI took), per detach, per
# change of measure, and per second of measuring (events, charge, attached, coasting, scale).
#   bash bench/gpu/runs/2026-11-29/build_trace.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
SRC=/tmp/vgpu-trace/src
rm -rf "$SRC" && mkdir -p "$SRC"
git -C "$ROOT" archive c29d327 | tar -x -C "$SRC"
patch -s -d "$SRC" -p1 <"$HERE/trace_probe.patch"
"$ROOT/bench/gpu/build_probe.sh" "$SRC" /tmp/vgpu-trace/b "$ROOT/.devbuild/trace/libvgpu.so"
ls -la "$ROOT/.devbuild/trace"
