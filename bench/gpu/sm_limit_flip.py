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
FLIP_ROUNDS (3), FLIP_WARMUP_S (5), FLIP_OFFSETS (JSON of bench/gpu/region_offsets.c),
CUDA_DEVICE_MEMORY_SHARED_CACHE (the region file libvgpu maps). Prints one JSON line.

`sm_limit_flip.py cycles`: limited phases of whole cycles of the limiter's rhythm, interleaved with
short lifted ones (see cycles_main).

`sm_limit_flip.py report shares|cycles LIMIT JSON ERR` prints a run's row of the shell's table.

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


def start_loop(warmup_s):
    """The loop, its region's flag and a warm-up with the limit lifted: (block, mapping, flag,
    end of the warm-up). block() runs ITERS launches and a synchronisation: (end, duration)."""
    import torch  # only the measurement needs it, not `set-flag`

    x = torch.zeros(256 * 1024, device=torch.device("cuda"), dtype=torch.float32)

    def block():
        t0 = time.perf_counter()
        for _ in range(ITERS):
            x.add_(1.0)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        return t1, t1 - t0

    block()  # libvgpu creates and registers the region on the first CUDA calls
    mm, flag = open_flag(os.environ["CUDA_DEVICE_MEMORY_SHARED_CACHE"],
                         json.loads(os.environ["FLIP_OFFSETS"]))
    flag.value = ALONE
    end = time.perf_counter() + warmup_s
    while True:
        t1, _ = block()
        if t1 >= end:
            return block, mm, flag, t1


def main():
    native_s = float(os.environ.get("FLIP_NATIVE_S", "6"))
    limited_s = float(os.environ.get("FLIP_LIMITED_S", "12"))
    rounds = int(os.environ.get("FLIP_ROUNDS", "3"))
    block, mm, flag, _ = start_loop(float(os.environ.get("FLIP_WARMUP_S", "5")))
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


def cycles_main():
    """`cycles` mode: the limited phases locked to the limiter's rhythm and interleaved finely.

    The host's speed wanders by 10-15 % over seconds but only 3-4 % between neighbouring quarter
    seconds (bench/gpu/host_drift.py), so phases of 6-12 s still see different hosts. Here a
    limited phase is FLIP_CYCLES whole cycles of the limiter's rhythm (stretch, wait): it starts
    at a flip to "shared" and ends with the block that came back from its last wait; then the
    limit is lifted for FLIP_NATIVE_S (default 0.5). Each flip falls at a block boundary, right
    after a synchronisation, so no batch spans it, and a limited phase starts with exactly the
    credit its predecessor's last wait saved (a stretch, as in a continuous limited run). Both
    kinds of phase are measured flip to flip. A phase's expected unlimited iterations are its
    length times the unlimited rate at the middle of its stretch, interpolated between the lifted
    phases around it (`share`; `share_flank_mean` takes their plain mean); the share is the
    limited iterations over those, summed until FLIP_LIMITED_TOTAL_S of limited time. A first
    limited phase (the limiter's start-up and first wait) is not counted. A budget wait is a
    block longer than FLIP_WAIT_MS (default 100; alone the waits last 0.2-1 s). FLIP_CONTROL=1
    keeps the limit lifted in the "limited" phases too (fixed FLIP_CONTROL_S each): the method's
    own noise.
    """
    native_s = float(os.environ.get("FLIP_NATIVE_S", "0.5"))
    cycles = int(os.environ.get("FLIP_CYCLES", "1"))
    total_s = float(os.environ.get("FLIP_LIMITED_TOTAL_S", "20"))
    control = os.environ.get("FLIP_CONTROL", "0") == "1"
    control_s = float(os.environ.get("FLIP_CONTROL_S", "1.43"))
    wait_s = float(os.environ.get("FLIP_WAIT_MS", "100")) / 1000
    block, mm, flag, start = start_loop(float(os.environ.get("FLIP_WARMUP_S", "5")))

    phases = []  # (limited, start, end, blocks, longest block)
    limited_time = 0.0
    limited = True  # a first limited phase, not counted: the limiter's start-up, its first wait
    while True:
        flag.value = SHARED if (limited and not control) else ALONE
        n, waits, longest = 0, 0, 0.0
        stop = start + (control_s if limited else native_s)
        while True:
            t1, d = block()
            n += 1
            longest = max(longest, d)
            if limited and not control:
                # Only the limiter's budget waits end a cycle (alone they last 0.2-1 s), not a
                # hiccup of the host: a phase cut mid-stretch would take its unspent credit, and
                # the lifted phase after it would top that up.
                waits += d > wait_s
                if waits >= cycles:
                    break
            elif t1 >= stop:
                break
        if phases or not limited:  # the first, start-up phase is not recorded
            phases.append((limited, start, t1, n, longest))
            if limited:
                limited_time += t1 - start
        start = t1
        if not limited and limited_time >= total_s:
            break
        limited = not limited
    flag.value = ALONE
    del flag
    mm.close()

    rate = [n * ITERS / (e - s) for _, s, e, n, _ in phases]
    centre = [(s + e) / 2 for _, s, e, _, _ in phases]
    done, expected, expected_mean, shares = 0, 0.0, 0.0, []
    for k in range(1, len(phases) - 1, 2):
        _, s, e, n, longest = phases[k]
        # The phase's work ran in its stretch, from the flip until the wait (the longest block,
        # less the few ms of launches after it): the unlimited rate is interpolated between the
        # lifted phases around it at the stretch's middle, as the host's speed wanders.
        middle = s + max(0.0, (e - s) - longest) / 2
        w = (middle - centre[k - 1]) / (centre[k + 1] - centre[k - 1])
        ref = (1 - w) * rate[k - 1] + w * rate[k + 1]
        done += n * ITERS
        expected += (e - s) * ref
        expected_mean += (e - s) * (rate[k - 1] + rate[k + 1]) / 2
        shares.append(100.0 * rate[k] / ref)
    native = [round(r) for k, r in enumerate(rate) if k % 2 == 0]
    print(json.dumps({
        "mode": "control" if control else "cycles",
        "share": round(100.0 * done / expected, 2),
        "share_flank_mean": round(100.0 * done / expected_mean, 2),
        "limited_s": round(limited_time, 2),
        "phases": len(shares),
        "phase_share_min": round(min(shares), 1),
        "phase_share_median": round(statistics.median(shares), 1),
        "phase_share_max": round(max(shares), 1),
        "limited_phase_s": round(statistics.median(
            e - s for lim, s, e, _, _ in phases if lim), 3),
        "longest_wait_ms": round(1000 * statistics.median(
            lw for lim, _, _, _, lw in phases if lim), 1),
        "native_rate_min": min(native),
        "native_rate_max": max(native),
        "shares": [round(v, 1) for v in shares],
        "limited_phases": [[round(e - s, 3), n, round(1000 * lw, 1)]
                           for lim, s, e, n, lw in phases if lim],
    }), flush=True)


def report(kind, limit, js, err):
    """`report shares|cycles LIMIT JSON ERR`: one table row of a run (sm_limit_flip.sh)."""
    import re
    try:
        r = json.loads(open(js).read().strip().splitlines()[-1])
    except Exception as e:
        print("%-7s  failed: %s; %s" % (limit, e, open(err).read()[-400:]))
        return
    if kind == "cycles":
        print("%-7s  %6.2f   (%6.2f)     %8.1f  %6d  %6.1f / %5.1f / %5.1f    %6.3f  %7.1f  %d-%d" % (
            limit, r["share"], r["share_flank_mean"], r["limited_s"], r["phases"],
            r["phase_share_min"], r["phase_share_median"], r["phase_share_max"],
            r["limited_phase_s"], r["longest_wait_ms"], r["native_rate_min"], r["native_rate_max"]))
        if os.environ.get("FLIP_VERBOSE", "0") != "0":
            print("         per phase: " + " ".join(str(v) for v in r["shares"]))
        return
    stats = re.search(r"launches (\d+), fast (\d+),.*measured ([\d.]+) ms, charged ([\d.]+) ms, "
                      r"throttled ([\d.]+)", open(err).read())
    lim = ""
    if stats:
        n, fast, measured, charged, throttled = (float(g) for g in stats.groups())
        lim = "fast %.0f %% of launches, charged %.1f %% of measured, time share %.1f %%" % (
            100 * fast / n, 100 * charged / measured, 100 * measured / (measured + throttled))
    print("%5s  %6.2f   %-26s %-28s %-7s %s" % (
        limit, r["share"], " ".join("%.1f" % s for s in r["shares"]),
        " ".join(str(v) for v in r["native_rates"]),
        "/".join(str(p) for p in r["limited_pauses"]), lim))
    print("       phases' running us/iter (N L N ...): %s; limited phases ran %s %% of the time" % (
        " ".join(str(v) for v in r["running_us_per_iter"]),
        " ".join(str(v) for v in r["limited_duty"])))


def set_flag(path, value):
    """`set-flag REGION VALUE`: writes the flag as the node monitor would (2 alone, 1 shared)."""
    mm, flag = open_flag(path, json.loads(os.environ["FLIP_OFFSETS"]))
    flag.value = int(value)
    del flag
    mm.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["set-flag"] and len(sys.argv) == 4:
        set_flag(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["cycles"]:
        cycles_main()
    elif sys.argv[1:2] == ["report"] and len(sys.argv) == 6:
        report(*sys.argv[2:])
    else:
        main()
