"""Real-GPU check of a framework under `vgpu run --gpumem N`: allocate 256 MiB blocks until the
framework raises its out-of-memory error, hold the peak briefly (the host's nvidia-smi is read
meanwhile), free, and allocate again. Prints key=value lines.

usage: frameworks.py torch|cupy|jax|hold3g
"""
import os
import sys
import time

CHUNK = 256 << 20
print("pid=%d" % os.getpid(), flush=True)
mode = sys.argv[1]


def report(total_bytes, blocks, err):
    print("framework_total_mib=%d" % (total_bytes >> 20))
    print("blocks=%d\nalloc_mib=%d\nerror=%s" % (len(blocks), len(blocks) * CHUNK >> 20, err))
    print("PEAK", flush=True)
    time.sleep(2)


if mode == "torch":
    import torch
    free, total = torch.cuda.mem_get_info()
    print("alloc_conf=%s" % os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "default"))
    blocks, err = [], "none"
    try:
        while len(blocks) < 4096:
            blocks.append(torch.empty(CHUNK, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError as e:
        err = "OutOfMemoryError"
    report(total, blocks, err)
    n = len(blocks)
    del blocks
    torch.cuda.empty_cache()
    again = []
    try:
        while len(again) < n:
            again.append(torch.empty(CHUNK, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    print("realloc_blocks=%d" % len(again))
elif mode == "cupy":
    import cupy as cp
    free, total = cp.cuda.runtime.memGetInfo()
    blocks, err = [], "none"
    try:
        while len(blocks) < 4096:
            blocks.append(cp.empty(CHUNK, dtype=cp.uint8))
    except cp.cuda.memory.OutOfMemoryError:
        err = "OutOfMemoryError"
    report(total, blocks, err)
    n = len(blocks)
    del blocks
    cp.get_default_memory_pool().free_all_blocks()
    again = []
    try:
        while len(again) < n:
            again.append(cp.empty(CHUNK, dtype=cp.uint8))
    except cp.cuda.memory.OutOfMemoryError:
        pass
    print("realloc_blocks=%d" % len(again))
elif mode == "jax":
    import jax
    import jax.numpy as jnp
    dev = jax.devices()[0]
    stats = dev.memory_stats() or {}
    print("jax_bytes_limit_mib=%d" % (stats.get("bytes_limit", 0) >> 20))
    blocks, err = [], "none"
    try:
        while len(blocks) < 4096:
            blocks.append(jnp.zeros((CHUNK,), dtype=jnp.uint8).block_until_ready())
    except Exception as e:  # XlaRuntimeError: RESOURCE_EXHAUSTED
        err = type(e).__name__ + (":RESOURCE_EXHAUSTED" if "RESOURCE_EXHAUSTED" in str(e) else "")
    report(stats.get("bytes_limit", 0), blocks, err)
    n = len(blocks)
    del blocks
    again = []
    try:
        while len(again) < n:
            again.append(jnp.zeros((CHUNK,), dtype=jnp.uint8).block_until_ready())
    except Exception:
        pass
    print("realloc_blocks=%d" % len(again))
elif mode == "hold3g":
    import torch
    try:
        x = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")
        print("hold3g=ok", flush=True)
    except torch.OutOfMemoryError:
        print("hold3g=oom", flush=True)
    except RuntimeError as e:  # the context itself refused: the container has no room for it
        first = (str(e).splitlines() or [""])[0]
        print("hold3g=oom" if "out of memory" in str(e) else "hold3g=error " + first, flush=True)
    time.sleep(8)
