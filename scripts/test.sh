#!/usr/bin/env bash
# README command 2: install dependencies, build (Debug + ASan/UBSan), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset dev >/dev/null
cmake --build --preset dev -j "$(nproc)"
ctest --preset dev -j "$(nproc)"
