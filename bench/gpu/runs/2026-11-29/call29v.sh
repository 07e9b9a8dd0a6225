#!/bin/bash
# Issue 18, acceptance 1 (median of 3) at the session's final library (ac813ce and later: only
# the saturation test counts free time to the nanosecond; turns keep the pass-granular count of
# 82388f0): call29u.sh's matmul part three times (~8 min) and each limited tenant's stats line,
# without its closed loop; the data in raw29v_matmul.tgz.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29v.sh      (device)
TAG=29v CLOSED=0 exec bash "$(dirname "$0")/call29u.sh"
