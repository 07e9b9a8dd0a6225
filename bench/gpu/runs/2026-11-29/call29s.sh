#!/bin/bash
# Issue 18, acceptance 6 on the training loop at HEAD (82388f0; last measured at 6fca53f: +2.8 %
# limited but not binding): call29f.sh, whole processes taking turns on one vCPU (native,
# native2, preload, l90 = HEAD, l90b = build_quiet.sh's quieter rhythm while nothing binds).
#   bash bench/gpu/runs/2026-11-29/build_quiet.sh; bash bench/gpu/prepare_devbuild.sh  (here)
#   bash bench/gpu/runs/2026-11-29/call29s.sh [BUDGET_S]   (device; `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
bash bench/gpu/runs/2026-11-29/call29f.sh "${1:-480}"
