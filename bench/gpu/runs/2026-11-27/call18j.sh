#!/bin/bash
# Issue 18, call J: call I again (matmul pair 30+70 and trio 20/30/50, library at 27738ad, defaults of
# ad4027d, 3 repetitions with baselines), with SM_BENCH_WARMUP=10 instead of 5 and one untimed warm-up
# of the GPU and PyTorch before the repetitions. Why: in call I the native baselines of reps 1 and 3
# caught the native tenant still starting (per-second native rates "0 0 204 600 ..." on a cold H100),
# which lowered the reference and inflated the shares (trio 50 -> 58.7, 53.3).
# Each repetition: 4 groups (base, pair, trio, base2) of SM_BENCH_WARMUP + SM_BENCH_WINDOW = 18 s,
# about 80 s with process start-up; the call about 4.5 min.
cd "$(dirname "$0")/../../../.."
R=$OUT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
echo "== untimed warm-up"
python3 -c "import torch; a=torch.randn(8192,8192,device='cuda'); [a@a for _ in range(200)]; torch.cuda.synchronize()"
date -u
for rep in 1 2 3; do
  O=/tmp/ms$rep; rm -rf "$O"; mkdir -p "$O"
  echo "== rep $rep"
  OUT=$O SM_BENCH_PARTS="shared" SM_BENCH_WINDOW=8 SM_BENCH_WARMUP=10 \
    VGPU_LIBRARY=$PWD/.devbuild/libvgpu.so bash bench/gpu/sm_limit_bench.sh 2>&1 |
    grep -E "^(baseline|pair|trio|scenario|SM limit|build)" | grep -v " done: "
done
tar czf "$R/raw.tgz" -C /tmp ms1 ms2 ms3 2>/dev/null
date -u
