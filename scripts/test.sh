#!/usr/bin/env bash
# README command 2: install dependencies, configure, check hygiene (scripts/hygiene.sh: formatting
# of every source, clang-tidy on the changed C++ files), build (Debug + ASan/UBSan), run every
# test: unit and integration tests, then (label e2e, run alone) the end-to-end tests on a real
# Kubernetes control plane, which need root and are reported as skipped otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset dev >/dev/null
./scripts/hygiene.sh --build build/dev
cmake --build --preset dev -j "$(nproc)"
ctest --preset all -j "$(nproc)"
