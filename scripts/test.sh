#!/usr/bin/env bash
# README command 2: install dependencies, configure, check hygiene (scripts/hygiene.sh: formatting
# of every source, clang-tidy on the changed C++ files), build (Debug + ASan/UBSan), run every
# test: unit and integration tests, then (label e2e, run alone) the end-to-end tests on a real
# Kubernetes control plane, which need root and are reported as skipped otherwise. Prints the
# adversarial suite's report at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset dev >/dev/null
./scripts/hygiene.sh --build build/dev
cmake --build --preset dev -j "$(nproc)"
rc=0
ctest --preset all -j "$(nproc)" || rc=$?
# The adversarial suite's report (tests/adversarial/README.md): for each abuse, whether the
# guarantee held and what a good client and the attacked process saw meanwhile.
report=build/dev/adversarial-report.md
if [[ -s $report ]]; then
  echo
  echo "Adversarial suite (tests/adversarial): $(wc -l <"$report") abuses"
  echo "| attacker | abuse | guarantee held | figures |"
  echo "|---|---|---|---|"
  sort "$report"
fi
exit "$rc"
