#!/bin/bash
# Issue 18, acceptances 4 and 1 at the library that charges a tenant alone as its records arrive
# (2a01b78; HEAD 82388f0): the closed request loop at gpucores 30 (its p99 failed at acd2782,
# call29o.sh), 3 reps, then the matmul part (alone 10/30/50/70, graph 30, pair, trio) twice;
# the alone rhythm's pause stays at its default (100 ms). ~8.5 min. Threads' names and CPU of
# each limited process (vgpu-sm, vgpu-cupti) are in its JSON's cpu_pct.
#   bash bench/gpu/prepare_devbuild.sh            (here, then carry .devbuild)
#   bash bench/gpu/runs/2026-11-29/call29r.sh      (device)
cd "$(dirname "$0")/../../../.." || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
date -u
OUT=$OUT/sm PARTS=infer-closed REPS=${REPS:-3} bash bench/gpu/sm_v2_bench.sh | grep -v " rep [0-9]*:"
date -u
mkdir -p "$OUT/stats"
bash bench/gpu/sm_stats_lines.sh "$OUT"/sm/raw/*_[0-9]*.err >"$OUT/stats/closed_stats.txt"
cut -c1-220 "$OUT/stats/closed_stats.txt"
grep -aho '"cpu_pct": {[^}]*}' "$OUT"/sm/raw/*.json 2>/dev/null | sort | uniq -c | head -8
tar czf "$OUT/raw29r_closed.tgz" -C "$OUT/sm" raw && rm -rf "$OUT/sm/raw"
OUT=$OUT/sm PARTS=matmul MATMUL_REPS=${MATMUL_REPS:-2} bash bench/gpu/sm_v2_bench.sh | tail -25
date -u
tar czf "$OUT/raw29r_matmul.tgz" -C "$OUT/sm" matmul && rm -rf "$OUT/sm/matmul"
