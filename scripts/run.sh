#!/usr/bin/env bash
# README command 1: install dependencies, build (release), run the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
./build/release/cli/vgpu --help
./build/release/cli/vgpu version
