"""Polls the host's NVML (no libvgpu) every 50 ms and records, per pid, the largest GPU memory
use seen; writes 'pid max_mib' lines to the file given as argv[1] when it gets SIGTERM."""
import signal
import sys
import time

import pynvml

pynvml.nvmlInit()
handle = pynvml.nvmlDeviceGetHandleByIndex(0)
peak = {}
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
while running:
    try:
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            used = p.usedGpuMemory or 0
            peak[p.pid] = max(peak.get(p.pid, 0), used)
    except pynvml.NVMLError:
        pass
    time.sleep(0.05)
with open(sys.argv[1], "w") as f:
    for pid, used in sorted(peak.items()):
        f.write("%d %d\n" % (pid, used >> 20))
