#!/bin/bash
# Issue 18, call K: acceptance 6 (overhead as whole processes in interleaved rounds) on the launch
# loop (`small`: 1 MiB elementwise ops, a sync every 200 launches), library from HEAD (libvgpu as at
# 27738ad). On 2026-11-25 (WARM 8, WIN 4, 5 rounds) single processes spread ±12 %; this call adds
# an A/A control, a second native group in the same rounds (OVH_AA=1: native2), so the
# native-vs-native spread shows the resolution floor, with longer windows and more rounds.
# Groups per round: native, native2, preload (libvgpu, no limit), l90 (gpucores 90, policy force,
# not binding); the order rotates by one each round; one process at a time, pinned to core 2.
# Settings: OVH_ROUNDS 7, WARM 7 s (start-up ~4 s), WIN 8 s: ~17 s a process, 28 processes ~8 min.
# A throwaway CUDA start first warms the page cache, so the first measured process is not late.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; date -u; nproc
python3 -c 'import time; t = time.time(); import torch; torch.ones(1, device="cuda").sum().item(); print("pre-warm %.1f s" % (time.time() - t))'
OUT=/tmp/ovs OVH_ROUNDS=7 OVH_AA=1 WARM=7 WIN=8 NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu.so \
  PARTS=overhead-small bash bench/gpu/sm_v2_bench.sh >/tmp/ovs.log 2>&1
sed -n '/== overhead/,$p' /tmp/ovs.log
python3 bench/gpu/runs/2026-11-27/ovh_aa.py small /tmp/ovs | tee /tmp/ovs/ovh_aa.txt
cp /tmp/ovs.log /tmp/ovs/
tar czf "$R/raw.tgz" -C /tmp ovs 2>/dev/null
date -u
