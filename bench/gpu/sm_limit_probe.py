"""Diagnostics for the SM limiter on a real GPU: why a limited tenant's throughput differs from its
GPU-time share. Samples the GPU (SM clock, power, clock-event reasons) every 10 ms with NVML while
tenants run natively and under libvgpu, and has each tenant time its own kernels with CUDA events.

  python3 bench/gpu/sm_limit_probe.py LIBVGPU OUTDIR

Prints one line per phase: throughput, median kernel time, and the GPU's median SM clock and power
while it ran. Writes OUTDIR/probe.json with everything (including the 10 ms samples).
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time


def tenant(kind, seconds):
    import torch
    dev = torch.device("cuda")
    if kind == "matmul":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        c = torch.empty_like(a)

        def step():
            torch.matmul(a, b, out=c)
        sync_every = 4
    else:
        x = torch.zeros(256 * 1024, device=dev, dtype=torch.float32)

        def step():
            x.add_(1.0)
        sync_every = 200
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.time()
    end = t0 + seconds
    slots = [0] * int(seconds * 10 + 1)
    kernel_ms = []
    done = 0
    k = 0
    while True:
        timed = kind == "matmul" and k % 8 == 0
        if timed:
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
        for _ in range(sync_every):
            step()
        if timed:
            e1.record()
        torch.cuda.synchronize()
        if timed:
            kernel_ms.append((time.time() - t0, e0.elapsed_time(e1) / sync_every))
        k += 1
        now = time.time()
        if now >= end:
            break
        slots[int((now - t0) * 10)] += sync_every
        done += sync_every
    print(json.dumps({"rate": done / seconds, "slots": slots, "kernel_ms": kernel_ms, "t0": t0}),
          flush=True)


def main():
    lib, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                samples.append((time.time(),
                                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                                pynvml.nvmlDeviceGetPowerUsage(h),
                                pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)))
            except Exception:
                pass
            time.sleep(0.01)
    th = threading.Thread(target=sample, daemon=True)
    th.start()
    info = {
        "power_limit_mw": pynvml.nvmlDeviceGetEnforcedPowerLimit(h),
        "max_sm_clock": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
    }
    for name, cid in (("app", "NVML_CLOCK_ID_APP_CLOCK_TARGET"),
                      ("app_default", "NVML_CLOCK_ID_APP_CLOCK_DEFAULT"),
                      ("boost_max", "NVML_CLOCK_ID_CUSTOMER_BOOST_MAX")):
        try:
            info[name] = pynvml.nvmlDeviceGetClock(h, pynvml.NVML_CLOCK_SM, getattr(pynvml, cid))
        except Exception as e:
            info[name] = str(e)
    print("gpu:", info, flush=True)
    phases = [
        ("idle", None, None, 2),
        ("matmul_native", "matmul", None, 6),
        ("idle2", None, None, 2),
        ("matmul_30", "matmul", "30", 6),
        ("matmul_70", "matmul", "70", 6),
        ("matmul_99", "matmul", "99", 6),
        ("small_native", "small", None, 4),
        ("small_99", "small", "99", 4),
        ("small_30", "small", "30", 4),
        ("small_70", "small", "70", 4),
        ("small_native2", "small", None, 4),
    ]
    results = []
    for name, kind, limit, secs in phases:
        t_start = time.time()
        r = {}
        if kind is None:
            time.sleep(secs)
        else:
            env = dict(os.environ)
            if limit is not None:
                env.update(LD_PRELOAD=lib, CUDA_DEVICE_SM_LIMIT=limit,
                           GPU_CORE_UTILIZATION_POLICY="force",
                           CUDA_DEVICE_MEMORY_SHARED_CACHE="/tmp/probe-%s.cache" % name)
            p = subprocess.run([sys.executable, __file__, "--tenant", kind, str(secs)], env=env,
                               capture_output=True, text=True)
            try:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            except Exception:
                r = {"error": p.stderr[-2000:]}
        t_end = time.time()
        t0 = r.get("t0", t_start)
        win = [s for s in samples if t0 + 0.5 <= s[0] <= t_end - 0.2]
        clk = statistics.median([s[1] for s in win]) if win else None
        pw = statistics.median([s[2] for s in win]) / 1000 if win else None
        reasons = sorted({s[3] for s in win})
        km = [k[1] for k in r.get("kernel_ms", []) if k[0] > 0.5]
        kmed = statistics.median(km) if km else None
        results.append({"name": name, "t_start": t_start, "t_end": t_end, "result": r,
                        "clock_med": clk, "power_med_w": pw, "reasons": reasons,
                        "kernel_ms_med": kmed})
        print("%-14s rate %8s  kernel %7s ms  clock %5s MHz  power %6s W  reasons %s" % (
            name, "%.1f" % r["rate"] if "rate" in r else r.get("error", "-")[:60],
            "%.3f" % kmed if kmed else "-", clk, "%.0f" % pw if pw else "-",
            [hex(x) for x in reasons]), flush=True)
    stop.set()
    th.join()
    with open(os.path.join(out, "probe.json"), "w") as f:
        json.dump({"info": info, "phases": results, "samples": samples}, f)
    # Clock response: the first 1.5 s of the native matmul after idle, 100 ms bins.
    ph = results[1]
    t0 = ph["result"].get("t0", ph["t_start"])
    bins = []
    for i in range(15):
        b = [s for s in samples if t0 + i * 0.1 <= s[0] < t0 + (i + 1) * 0.1]
        if b:
            bins.append("%d:%d/%.0fW" % (i, statistics.median([s[1] for s in b]),
                                         statistics.median([s[2] for s in b]) / 1000))
    print("native matmul ramp (100 ms bins, clock/power):", " ".join(bins))
    km = ph["result"].get("kernel_ms", [])
    print("native kernel ms over time:", " ".join("%.2f@%.2f" % (k[1], k[0]) for k in km[:40]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--tenant":
        tenant(sys.argv[2], float(sys.argv[3]))
    else:
        main()
