"""The launch-bound loop's share measured inside one process (driven by sm_limit_flip.sh).

Across processes, the `small` loop's native rate on the GPU machines moves by +-12 % from one
window to the next (docs/gpu-results.md), more than the +-3 points to be resolved. Here one process
runs the loop under GPU_CORE_UTILIZATION_POLICY=default and drives the node monitor's flag in its
own container region (sm_limit_active of the device record: 2 = alone, the limit lifted; 1 =
shared, the limit holds), alternating phases N L N L ... N. Every limited phase is compared with the
mean rate of the two unlimited phases around it: same process, same memory, same core, seconds
apart.

A tenant alone runs in stretches (up to 1 s of work, up to 1 s of waiting, docs/sm-limit.md
step 3), so a limited phase is measured over whole cycles: from the end of its first pause to the
end of its last one (its first stretch also spends the credit saved while the limit was lifted,
and is left out with it). An unlimited phase is measured from 0.5 s after the flip.

Environment: FLIP_NATIVE_S (default 6), FLIP_LIMITED_S (12),
FLIP_ROUNDS (3), FLIP_WARMUP_S (5), FLIP_OFFSETS (JSON of tests/gpu/region_offsets.c),
CUDA_DEVICE_MEMORY_SHARED_CACHE (the region file libvgpu maps). Prints one JSON line.

`sm_limit_flip.py set-flag REGION VALUE` (FLIP_OFFSETS set) writes the flag of another process's
region file, as the node monitor would.
"""
import ctypes
import json
import mmap
import os
import statistics
import sys
import time

ALONE, SHARED = 2, 1
ITERS = 200  # launches per synchronised block, as the `small` workload


def open_flag(path, offsets):
    """The node monitor's flag of device record 0 in the region file at `path`, checked to be an
    initialised region with a registered GPU: (mapping, flag)."""
    fd = os.open(path, os.O_RDWR)
    size = os.fstat(fd).st_size
    mm = mmap.mmap(fd, size)
    os.close(fd)
    magic = ctypes.c_uint64.from_buffer(mm, offsets["magic"]).value
    count = ctypes.c_uint32.from_buffer(mm, offsets["device_count"]).value
    if magic != offsets["expected_magic"] or count < 1:
        raise SystemExit("%s: not an initialised region (magic %x, %d devices)" % (path, magic, count))
    record = offsets["devices"]  # device record 0: the only GPU of the process
    uuid = bytes(mm[record + offsets["uuid"]:record + offsets["uuid"] + 40]).split(b"\0")[0]
    if not uuid.startswith(b"GPU-"):
        raise SystemExit("%s: device record 0 has no GPU uuid (%r)" % (path, uuid))
    return mm, ctypes.c_int32.from_buffer(mm, record + offsets["sm_limit_active"])


def phase_rate(blocks, limited, pause_s):
    """Iterations per second of one phase's blocks [(end, duration)], over whole cycles when
    limited; (rate, span_s, pauses)."""
    if limited:
        paused = [i for i, (_, d) in enumerate(blocks) if d > pause_s]
        if len(paused) >= 3:
            first, last = paused[0], paused[-1]
            span = blocks[last][0] - blocks[first][0]
            return (last - first) * ITERS / span, span, len(paused)
        skip = 2.0
    else:
        paused, skip = [], 0.5
    t0 = blocks[0][0] - blocks[0][1]
    kept = [(e, d) for e, d in blocks if e - d >= t0 + skip]
    span = kept[-1][0] - (kept[0][0] - kept[0][1])
    return len(kept) * ITERS / span, span, len(paused)


def main():
    import torch  # only the measurement needs it, not `set-flag`

    offsets = json.loads(os.environ["FLIP_OFFSETS"])
    native_s = float(os.environ.get("FLIP_NATIVE_S", "6"))
    limited_s = float(os.environ.get("FLIP_LIMITED_S", "12"))
    rounds = int(os.environ.get("FLIP_ROUNDS", "3"))
    warmup_s = float(os.environ.get("FLIP_WARMUP_S", "5"))
    x = torch.zeros(256 * 1024, device=torch.device("cuda"), dtype=torch.float32)

    def block():
        t0 = time.perf_counter()
        for _ in range(ITERS):
            x.add_(1.0)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        return t1, t1 - t0

    block()  # libvgpu creates and registers the region on the first CUDA calls
    mm, flag = open_flag(os.environ["CUDA_DEVICE_MEMORY_SHARED_CACHE"], offsets)
    flag.value = ALONE
    end = time.perf_counter() + warmup_s
    while block()[0] < end:
        pass
    phases = []  # (limited, [(end, duration)])
    for k in range(2 * rounds + 1):
        limited = k % 2 == 1
        flag.value = SHARED if limited else ALONE
        end = time.perf_counter() + (limited_s if limited else native_s)
        blocks = []
        while True:
            blocks.append(block())
            if blocks[-1][0] >= end:
                break
        phases.append((limited, blocks))
    flag.value = ALONE
    del flag
    mm.close()

    native_block = statistics.median(d for lim, bl in phases if not lim for _, d in bl)
    pause_s = max(0.05, 10 * native_block)

    def running_block(blocks):
        """Median duration of the phase's blocks that held no pause."""
        return statistics.median(d for _, d in blocks if d <= pause_s)

    def duty(blocks):
        """Fraction of the phase the loop ran: a paused block's excess over a running one is
        its wait."""
        span = blocks[-1][0] - (blocks[0][0] - blocks[0][1])
        run = running_block(blocks)
        waited = sum(d - run for _, d in blocks if d > pause_s)
        return round(100.0 * (1 - waited / span), 1)

    rates = [phase_rate(bl, lim, pause_s) for lim, bl in phases]
    shares = []
    for k in range(1, len(phases), 2):
        ref = (rates[k - 1][0] + rates[k + 1][0]) / 2
        shares.append(100.0 * rates[k][0] / ref)
    print(json.dumps({
        "native_rates": [round(r[0]) for k, r in enumerate(rates) if k % 2 == 0],
        "limited_rates": [round(r[0]) for k, r in enumerate(rates) if k % 2 == 1],
        "limited_spans_s": [round(r[1], 2) for k, r in enumerate(rates) if k % 2 == 1],
        "limited_pauses": [r[2] for k, r in enumerate(rates) if k % 2 == 1],
        "shares": [round(s, 2) for s in shares],
        "share": round(statistics.mean(shares), 2),
        "native_us_per_iter": round(native_block / ITERS * 1e6, 3),
        "running_us_per_iter": [round(running_block(bl) / ITERS * 1e6, 3) for _, bl in phases],
        "limited_duty": [duty(bl) for lim, bl in phases if lim],
    }), flush=True)


def set_flag(path, value):
    """`set-flag REGION VALUE`: writes the flag as the node monitor would (2 alone, 1 shared)."""
    mm, flag = open_flag(path, json.loads(os.environ["FLIP_OFFSETS"]))
    flag.value = int(value)
    del flag
    mm.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["set-flag"] and len(sys.argv) == 4:
        set_flag(sys.argv[2], sys.argv[3])
    else:
        main()
