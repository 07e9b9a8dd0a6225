"""In-process A/B of libvgpu's SM limit: enforced against lifted, in alternating slices of one process.

Used by `sm_workloads.py KIND --toggle-ab OFFSET`, which bench/gpu/toggle_ab.sh runs. Under
GPU_CORE_UTILIZATION_POLICY=default the limiter holds the limit unless the region's device record
says the container is alone on its GPU (`sm_sharing` = VGPU_SM_SHARING_ALONE, the node monitor's
flag: then a launch costs one flag read, as with the library preloaded and no limit). Flipping that
flag between slices of the same loop in the same process compares the two with everything else
equal: the process, its memory layout, its vCPU and that vCPU's drift, which between whole
processes spread the overhead by several points. What it cannot see: costs a limited process pays
whether or not the limit holds at the moment (the measuring thread's start, CUPTI's first attach).

The flag's byte offset in the region file (CUDA_DEVICE_MEMORY_SHARED_CACHE) comes from the caller,
which computes it from libvgpu/include/vgpu/region_layout.h (the one home of the layout).
"""
import mmap
import os
import random
import struct
import time

REGION_MAGIC = 0x31555047564755  # VGPU_REGION_MAGIC
SHARING_UNKNOWN, SHARING_ALONE = 0, 2  # VGPU_SM_SHARING_*: the limit holds / is lifted


class SharingFlag:
    """The region's sm_sharing word of one device record, mapped read-write."""

    def __init__(self, offset):
        path = os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE")
        if not path or not os.path.exists(path):
            raise SystemExit("--toggle-ab: no region file (CUDA_DEVICE_MEMORY_SHARED_CACHE); libvgpu must be preloaded")
        fd = os.open(path, os.O_RDWR)
        try:
            self.mm = mmap.mmap(fd, 0)
        finally:
            os.close(fd)
        magic = struct.unpack_from("<Q", self.mm, 0)[0]
        if magic != REGION_MAGIC:
            raise SystemExit("--toggle-ab: %s is not a vgpu region (magic %#x)" % (path, magic))
        if not 0 < offset <= len(self.mm) - 4 or offset % 4:
            raise SystemExit("--toggle-ab: offset %d is outside the region or misaligned" % offset)
        self.offset = offset

    def set(self, value):
        struct.pack_into("<i", self.mm, self.offset, value)

    def get(self):
        return struct.unpack_from("<i", self.mm, self.offset)[0]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2.0


def bootstrap_ci(xs, rng, n=2000):
    """95 % percentile bootstrap interval of the median."""
    meds = sorted(median([rng.choice(xs) for _ in xs]) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def run(unit, offset, pairs, slice_units, seed):
    """`pairs` pairs of slices (enforced, lifted in a random order), each `slice_units` units after
    one untimed unit that settles the switch. Returns the result as a dict."""
    flag = SharingFlag(offset)
    rng = random.Random(seed)
    rows = []
    for _ in range(pairs):
        row = {}
        for arm in rng.sample(("enforced", "lifted"), 2):
            flag.set(SHARING_UNKNOWN if arm == "enforced" else SHARING_ALONE)
            unit()
            items = 0
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(slice_units):
                items += unit()
            row[arm] = (time.perf_counter() - t0, time.process_time() - c0, items)
        rows.append(row)
    flag.set(SHARING_UNKNOWN)
    out = {"pairs": pairs, "slice_units": slice_units}
    for what, i in (("wall", 0), ("cpu", 1)):
        # Time per item, enforced over lifted, per pair: the overhead of holding the limit.
        ratios = [100.0 * (r["enforced"][i] / r["enforced"][2] / (r["lifted"][i] / r["lifted"][2]) - 1.0)
                  for r in rows]
        lo, hi = bootstrap_ci(ratios, rng)
        out[what] = {"median_pct": round(median(ratios), 3), "ci95": [round(lo, 3), round(hi, 3)],
                     "slower_in": sum(x > 0 for x in ratios)}
    out["rate_lifted"] = round(median([r["lifted"][2] / r["lifted"][0] for r in rows]), 1)
    out["rate_enforced"] = round(median([r["enforced"][2] / r["enforced"][0] for r in rows]), 1)
    out["slice_s"] = round(median([r["lifted"][0] for r in rows]), 4)
    return out
