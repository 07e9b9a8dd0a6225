#!/bin/bash
# Issue 18, acceptance 6: call28k.sh found the limited launch path (gpucores 90, not binding, CUPTI
# detached) ~5 % slower than native on the launch loop, as the in-process paired probe did on the
# H100 hosts (+4.8-5.5 %). Which part of the path costs it: tests/libvgpu/support/paired_launch.c
# (hook vs the driver's own entry point in alternating blocks, one process) for native, preload and
# four builds of the limited path (build_variants.sh), ROUNDS rounds in rotating order, one core.
#   bench/gpu/runs/2026-11-28/build_variants.sh   (here, before the call)
#   bash bench/gpu/runs/2026-11-28/call28l.sh [ROUNDS]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
R=${1:-4}
W=/tmp/l; mkdir -p $W
gcc -O2 -std=gnu11 -I/usr/local/cuda/include -o $W/paired tests/libvgpu/support/paired_launch.c -lcuda -ldl || exit 1
CFGS=(native preload v0 v1 v2 v3)
for r in $(seq 1 "$R"); do
  for k in 0 1 2 3 4 5; do
    c=${CFGS[$(((k + r) % 6))]}
    case $c in
      native) env -u LD_PRELOAD taskset -c 8 $W/paired 2000 300 ;;
      preload) LD_PRELOAD=$PWD/.devbuild/var/libvgpu-0.so CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/c$r$c \
        taskset -c 8 $W/paired 2000 300 ;;
      v*) rm -rf /tmp/vgpulock; mkdir -m 1777 /tmp/vgpulock
        LD_PRELOAD=$PWD/.devbuild/var/libvgpu-${c#v}.so CUDA_DEVICE_SM_LIMIT=90 GPU_CORE_UTILIZATION_POLICY=force \
        VGPU_SM_STATS=1 CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/c$r$c taskset -c 8 $W/paired 2000 300 2>$W/$c.$r.err ;;
    esac | tail -1 | sed "s/^/$c $r /" | tee -a $W/results
  done
done
python3 - $W/results <<'PY'
import json, statistics, sys
by = {}
for ln in open(sys.argv[1]):
    c, r, js = ln.split(" ", 2)
    try:
        by.setdefault(c, []).append(json.loads(js))
    except ValueError:
        pass
for c in ("native", "preload", "v0", "v1", "v2", "v3"):
    v = [x for x in by.get(c, []) if "overhead_pct" in x]
    if v:
        print("%-8s hooked-direct overhead per round %s; median %+.2f %%; hooked %s ns, direct %s ns" % (
            c, " ".join("%+.2f" % x["overhead_pct"] for x in v), statistics.median(x["overhead_pct"] for x in v),
            "/".join("%.0f" % x["hooked_ns"] for x in v), "/".join("%.0f" % x["direct_ns"] for x in v)))
PY
for f in $W/v*.1.err; do echo "$(basename $f) $(grep -a 'sm-limit\]' $f | tail -1 | cut -c1-300)"; done
cp $W/results "$OUT/"
date -u
