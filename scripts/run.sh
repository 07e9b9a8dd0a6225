#!/usr/bin/env bash
# README command 1: install dependencies, build (release), run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
# The main job: a simulated cluster (real extender, webhook and device plugins) comparing binpack
# and spread on a built-in scenario; see docs/sim.md.
./build/release/cli/vgpu sim
