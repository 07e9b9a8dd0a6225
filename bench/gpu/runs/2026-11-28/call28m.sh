#!/bin/bash
# Issue 18, acceptance 6: the limited launch path without cuCtxGetDevice for a process that sees
# one device (the library at HEAD, .devbuild/libvgpu.so) against the one before it (call28l's
# variant 0, .devbuild/var/libvgpu-0.so, the library of d89f467): the in-process paired probe,
# then whole processes taking turns on one vCPU (ovh_turns.py --one-cpu 8 --lib2) on the launch
# loop: native, native2, preload, l90 (before), l90b (HEAD).
#   bench/gpu/prepare_devbuild.sh && bench/gpu/runs/2026-11-28/build_variants.sh   (here)
#   bash bench/gpu/runs/2026-11-28/call28m.sh [TURNS_BUDGET_S]   (repository root, `.devbuild` carried)
cd "$(dirname "$0")/../../../.." || exit 1
taskset -cp 0-3 $$ >/dev/null
date -u
OLD=$PWD/.devbuild/var/libvgpu-0.so
NEW=$PWD/.devbuild/libvgpu.so
W=/tmp/m; mkdir -p $W
gcc -O2 -std=gnu11 -I/usr/local/cuda/include -o $W/paired tests/libvgpu/support/paired_launch.c -lcuda -ldl || exit 1
for r in 1 2 3; do
  for c in native old new; do
    case $c in
      native) env -u LD_PRELOAD taskset -c 8 $W/paired 2000 300 ;;
      old) LD_PRELOAD=$OLD CUDA_DEVICE_SM_LIMIT=90 GPU_CORE_UTILIZATION_POLICY=force \
        CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/c$r$c taskset -c 8 $W/paired 2000 300 ;;
      new) LD_PRELOAD=$NEW CUDA_DEVICE_SM_LIMIT=90 GPU_CORE_UTILIZATION_POLICY=force \
        CUDA_DEVICE_MEMORY_SHARED_CACHE=$W/c$r$c taskset -c 8 $W/paired 2000 300 ;;
    esac | tail -1 | tee -a $W/paired.jsonl | python3 -c 'import json,sys; x=json.loads(sys.stdin.read()); print("%s %s paired %+.2f %% [%+.2f, %+.2f] hooked %.0f direct %.0f ns" % (sys.argv[1], sys.argv[2], x["overhead_pct"], x["overhead_p25"], x["overhead_p75"], x["hooked_ns"], x["direct_ns"]))' $c $r
  done
done
mkdir -p $W/turns
python3 bench/gpu/ovh_turns.py run small $W/turns --lib "$OLD" --lib2 "$NEW" --pin 8-11 --one-cpu 8 --limit 90 \
  --slice-s 0.5 --rounds 12 --warmup-s 5 --budget-s "${1:-300}" --seed 91 --startup-s 8 | grep -v "^  turns"
for f in $W/turns/turns_*_l90*.err; do echo "$(basename "$f") $(grep -a 'sm-limit\]' "$f" | tail -1 | cut -c1-400)"; done
tar czf "$OUT/m.tgz" -C /tmp m
date -u
