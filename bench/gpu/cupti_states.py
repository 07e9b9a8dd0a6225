"""What CUPTI's state costs a host-bound PyTorch loop, in one process (no libvgpu): phases of the
train loop of sm_workloads.py and of a launch-bound add_ loop, interleaved: never touched CUPTI,
CONCURRENT_KERNEL records on (flushed every FLUSH_MS), and the kind switched off again after it was
on. Prints one line per phase (steps/s, µs per launch) and medians per state.

  gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o /tmp/cupti_states_shim.so \\
      bench/gpu/cupti_states_shim.c -L/usr/local/cuda/lib64 -lcupti
  LD_LIBRARY_PATH=/usr/local/cuda/lib64 taskset -c 2 python3 bench/gpu/cupti_states.py /tmp/cupti_states_shim.so
"""
import ctypes
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sm_workloads  # noqa: E402
import torch  # noqa: E402

PHASE_S = float(os.environ.get("PHASE_S", "3"))
FLUSH_MS = float(os.environ.get("FLUSH_MS", "8"))


class Args:
    pass


def train_unit():
    a = Args()
    for k, v in sm_workloads.DEFAULTS["train"].items():
        setattr(a, k, v)
    a.vocab = 8192
    return sm_workloads.make_train(a, torch.device("cuda"))


def small_us(x, seconds):
    """µs per launch of a launch-bound add_ loop (sync every 200 launches)."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(200):
            x.add_(1.0)
        torch.cuda.synchronize()
        n += 200
    return 1e6 * (time.perf_counter() - t0) / n


def steps_per_s(unit, seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        n += unit()
    return n / (time.perf_counter() - t0)


def main():
    shim = ctypes.CDLL(sys.argv[1])
    shim.shim_records.restype = ctypes.c_uint64
    unit = train_unit()
    x = torch.zeros(1024, device="cuda")
    for _ in range(5):
        unit()
    small_us(x, 0.5)
    stop = threading.Event()
    flushing = threading.Event()

    def flusher():  # the limiter's measuring thread flushes while records are on
        while not stop.is_set():
            if flushing.is_set():
                shim.shim_flush()
            time.sleep(FLUSH_MS / 1000)

    threading.Thread(target=flusher, daemon=True).start()
    plan = ["never", "never"] + ["on", "off"] * 3 + ["on"]
    started = False
    rows = []
    for state in plan:
        if state != "never" and not started:
            assert shim.shim_start(int(os.environ.get("TIMESTAMP_CB", "1"))) == 0
            started = True
        if state == "on":
            shim.shim_enable(1)
            flushing.set()
        elif state == "off":
            shim.shim_enable(0)
            flushing.clear()
        r0 = shim.shim_records()
        sps = steps_per_s(unit, PHASE_S)
        us = small_us(x, 1.0)
        rows.append((state, sps, us))
        print("%-6s %6.2f steps/s  %6.2f us/launch  records %d" % (state, sps, us, shim.shim_records() - r0),
              flush=True)
    stop.set()
    for state in ("never", "on", "off"):
        s = [r for r in rows if r[0] == state]
        print("%-6s median %6.2f steps/s  %6.2f us/launch  (%d phases)" % (
            state, statistics.median(r[1] for r in s), statistics.median(r[2] for r in s), len(s)))


if __name__ == "__main__":
    main()
