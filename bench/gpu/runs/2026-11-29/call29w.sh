#!/bin/bash
# Issue 18, acceptance 3 once more (call29k.sh's pair 30 + 70 read 35.38 combined steps/s against
# a bound of 35.49): the pair part three times more at the same library, ~4 min. Run on
# 2026-11-29 as the same commands typed into the device call.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29w.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
date -u
OUT=$OUT/sm PARTS=pair REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh 2>&1 | grep -v " rep [0-9]*:" |
  tail -20
tar czf "$OUT/raw29w_pair.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
date -u
