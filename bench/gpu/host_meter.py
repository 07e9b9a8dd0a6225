"""Background samplers for the SM-limit GPU bench (sm_limit_bench.sh), to tell the host's drift
from the limiter's doing when a launch-bound loop is measured:

  python3 host_meter.py cpu OUT.jsonl   # a fixed pure-Python loop: iterations per 100 ms
  python3 host_meter.py gpu OUT.jsonl   # the GPU's SM clock (MHz) and utilisation, every 50 ms

One JSON line per sample ({"t": unix time, "cpu": ...} or {"t": ..., "sm_mhz": ..., "util": ...}),
flushed at once, until killed.
"""
import json
import sys
import time


def spin_rate(seconds):
    """Rounds per second of a fixed pure-Python loop, run for `seconds`: (rate, end time)."""
    t0 = time.time()
    n = 0
    while time.time() - t0 < seconds:
        for _ in range(1000):
            pass
        n += 1
    t1 = time.time()
    return n / (t1 - t0), t1


def cpu(out):
    while True:
        rate, t1 = spin_rate(0.1)
        out.write(json.dumps({"t": t1, "cpu": rate}) + "\n")
        out.flush()


def gpu(out):
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    while True:
        try:
            clock = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
            util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
            out.write(json.dumps({"t": time.time(), "sm_mhz": clock, "util": util}) + "\n")
            out.flush()
        except pynvml.NVMLError:
            pass
        time.sleep(0.05)


if __name__ == "__main__":
    with open(sys.argv[2], "a") as f:
        {"cpu": cpu, "gpu": gpu}[sys.argv[1]](f)
