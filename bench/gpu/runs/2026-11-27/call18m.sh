#!/bin/bash
# Issue 18, call M: where does a limit that does not bind cost the launch loop ~20 % (call K: l90
# 78.9k/s vs native 92.7k/s, waits 0)? The same loop at gpucores 90 with and without CUPTI
# (OVH_EVENTS=1 adds "l90ev": VGPU_CUPTI_LIBRARY=off, events only) next to native and preload.
# Groups per round: native, preload, l90, l90ev; order rotates; one process at a time on core 2.
# OVH_ROUNDS 5, WARM 7, WIN 8: ~17 s a process, 20 processes ~6 min.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
python3 -c 'import torch; torch.ones(1, device="cuda").sum().item()'
OUT=/tmp/ovm OVH_ROUNDS=5 OVH_EVENTS=1 WARM=7 WIN=8 NVML=0 LIBVGPU=$PWD/.devbuild/libvgpu.so \
  PARTS=overhead-small bash bench/gpu/sm_v2_bench.sh >/tmp/ovm.log 2>&1
python3 - <<'PY'
import glob, json, re, statistics as st
rows = {}
for f in glob.glob("/tmp/ovm/raw/ovh_small_*.r*.0.json"):
    m = re.search(r"ovh_small_(\w+)\.r(\d+)\.0\.json", f)
    rows.setdefault(m.group(1), {})[int(m.group(2))] = json.load(open(f))["rate"]
nat = rows.get("native", {})
for g in sorted(rows):
    rs = rows[g]
    ratios = [100 * (nat[r] / rs[r] - 1) for r in sorted(rs) if r in nat and rs[r] > 0]
    print("%-8s rates %s  slowdown vs native %% %s  median %.1f" % (g, [round(rs[r]) for r in sorted(rs)],
          [round(x, 1) for x in ratios], st.median(ratios) if ratios else float("nan")))
PY
for f in /tmp/ovm/raw/ovh_small_l90*.r*.0.err; do echo "$(basename $f) $(grep -a 'sm-limit\]' $f | tail -1 | grep -o 'measure=.*' | cut -c1-230)"; done
cp /tmp/ovm.log /tmp/ovm/
tar czf "$R/raw.tgz" -C /tmp ovm 2>/dev/null
date -u
