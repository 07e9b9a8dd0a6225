"""Workloads and checks of bench/gpu/multigpu_bench.sh (issue 23: libvgpu on a 2-GPU machine).

Every subcommand prints human lines starting with INFO/NOTE and one line per check:

    RESULT <tag> <PASS|FAIL|SKIP> <numbers>

  alloc     (parts A, B) run under libvgpu with CUDA_DEVICE_MEMORY_LIMIT_<i> set by the caller:
            fill each visible device with 256 MiB tensors, then 16 MiB ones, until
            torch.OutOfMemoryError, holding everything (so device 1 is filled while device 0 is
            full); per device: the totals the process sees (cuMemGetInfo, cuDeviceTotalMem),
            the library's usage at OOM (limit - free), PyTorch's reserved bytes, the driver's real
            per-process footprint (nvidia-smi --query-compute-apps, run without the preload), the
            region's record (limit, UUID). --smi: also nvidia-smi run under the preload.
  nccl      (part C) launches 2 ranks (both GPUs visible, rank r on cuda:r, limits _0/_1, one
            region = one 2-GPU pod), all_reduce of a known tensor; the library's usage before and
            after the communicator's init and the first all_reduce. --negative-from: limits just
            above the pre-NCCL usage measured by the positive run, expecting an OOM.
  nccl-rank one rank of `nccl` (internal).
  sm        (part D) a saturating bf16 matmul loop on each listed device, one thread per device,
            all concurrently; iterations/s per device in --reps windows of --window s after
            --warmup s. JSON to --out.
  sm-report (part D) shares of the limited run against the native run, per device.

Needs torch only in alloc, nccl-rank and sm; everything else is the standard library, so the
script's dry run on a machine without a GPU fails cleanly.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

MiB = 1 << 20
OOM_PAT = re.compile(r"out of memory|OutOfMemory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
                     r"refused on device", re.I)

# ---- shared region (libvgpu/include/vgpu/region_layout.h, version 2) ------------------------------
# Sizes checked against the header's own header_size/file_size before anything is read.
R_MAGIC, R_VERSION, R_HDR, R_DEV, R_PROC, R_MAXDEV, R_MAXPROC = 0x31555047564755, 2, 176, 448, 664, 16, 1024


def read_region(path):
    """The region file as a dict (devices by record index, live process slots), or {"error": ...}."""
    if not path:
        return {"error": "no CUDA_DEVICE_MEMORY_SHARED_CACHE"}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return {"error": "cannot read %s: %s" % (path, e)}
    want = R_HDR + R_MAXDEV * R_DEV + R_MAXPROC * R_PROC
    if len(data) < R_HDR:
        return {"error": "region %s: %d bytes" % (path, len(data))}
    magic, version, hsize, fsize = struct.unpack_from("<QIIQ", data, 0)
    if magic != R_MAGIC or version != R_VERSION or hsize != R_HDR or fsize != want or len(data) < want:
        return {"error": "region layout differs (magic %x version %d header %d size %d): reader out of date"
                % (magic, version, hsize, fsize)}
    count = min(struct.unpack_from("<I", data, 32)[0], R_MAXDEV)
    devs = []
    for d in range(count):
        o = R_HDR + d * R_DEV
        uuid = data[o:o + 96].split(b"\0")[0].decode(errors="replace")
        limit, phys, used, sm = struct.unpack_from("<QQQI", data, o + 96)
        busy, charged, throttled = struct.unpack_from("<QQQ", data, o + 208)
        devs.append(dict(uuid=uuid, limit=limit, physical=phys, used=used, sm_limit=sm,
                         sm_busy_ns=busy, sm_charged_ns=charged, sm_throttled_ns=throttled))
    procs = []
    base = R_HDR + R_MAXDEV * R_DEV
    for s in range(R_MAXPROC):
        o = base + s * R_PROC
        pid = struct.unpack_from("<i", data, o)[0]
        if pid == 0:
            continue
        mem = struct.unpack_from("<16Q", data, o + 24)
        ovh = struct.unpack_from("<16Q", data, o + 152)
        procs.append(dict(pid=pid, mem_used=list(mem[:count]), overhead=list(ovh[:count])))
    return {"devices": devs, "procs": procs}


def norm_uuid(s):
    s = str(s or "").lower()
    if s.startswith("gpu-"):
        s = s[4:]
    return re.sub(r"[^0-9a-f]", "", s)


def region_dev(region, uuid):
    """Index of the region record for `uuid`, or -1."""
    for i, d in enumerate(region.get("devices", [])):
        if norm_uuid(d["uuid"]) == norm_uuid(uuid):
            return i
    return -1


def region_slot(region, pid, uuid):
    """(tracked bytes, measured overhead bytes) of process `pid` on the GPU `uuid`, or (None, None)."""
    i = region_dev(region, uuid)
    for p in region.get("procs", []):
        if p["pid"] == pid and i >= 0:
            return p["mem_used"][i], p["overhead"][i]
    return None, None


# ---- nvidia-smi -------------------------------------------------------------------------------------
def plain_env():
    """The environment without the preload (nvidia-smi's own, unvirtualised view)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def run_text(args, env=None, timeout=20):
    try:
        r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
        return r.stdout if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def smi_apps():
    """[(pid, normalised uuid, used MiB or None)] from the real NVML, or None."""
    out = run_text(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                    "--format=csv,noheader,nounits"], env=plain_env())
    if out is None:
        return None
    rows = []
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 3 and f[0].isdigit():
            rows.append((int(f[0]), norm_uuid(f[1]), int(f[2]) if f[2].isdigit() else None))
    return rows


def real_mib(apps, pid, uuid):
    """The driver's footprint of `pid` on `uuid` in MiB: None when unknown (nvidia-smi failed, or it
    lists `pid` on no GPU at all: another PID namespace), 0 when it lists it elsewhere only."""
    if apps is None or not any(a[0] == pid for a in apps):
        return None
    mine = [a[2] for a in apps if a[0] == pid and a[1] == norm_uuid(uuid)]
    return None if None in mine else sum(mine)  # None: used_memory "[N/A]"


def smi_gpus(env):
    """{normalised uuid: (index, total MiB, used MiB)} from nvidia-smi run with `env`, or None."""
    out = run_text(["nvidia-smi", "--query-gpu=index,uuid,memory.total,memory.used",
                    "--format=csv,noheader,nounits"], env=env)
    if out is None:
        return None
    res = {}
    for line in out.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 4 and f[0].isdigit():
            res[norm_uuid(f[1])] = (int(f[0]), int(f[2]) if f[2].isdigit() else None,
                                    int(f[3]) if f[3].isdigit() else None)
    return res


def result(tag, ok, text):
    status = ok if isinstance(ok, str) else ("PASS" if ok else "FAIL")
    print("RESULT %s %s %s" % (tag, status, text), flush=True)


def mib(x):
    return None if x is None else int(round(x / MiB))


def fmt(x):
    return "n/a" if x is None else str(x)


# ---- part A / B: allocation to the limit ------------------------------------------------------------
def cmd_alloc(a):
    import torch
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t)
    limits = [int(x) for x in a.limits_mib.split(",")]
    uuids = [norm_uuid(u) for u in a.uuids.split(",")] if a.uuids else []
    absent = [norm_uuid(u) for u in a.absent.split(",")] if a.absent else []
    region_path = os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE")
    pid = os.getpid()
    n = torch.cuda.device_count()
    print("INFO %s: pid %d sees %d device(s); CUDA_VISIBLE_DEVICES=%s; limits %s" % (
        a.tag, pid, n, os.environ.get("CUDA_VISIBLE_DEVICES", "<unset>"),
        " ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                 if k.startswith("CUDA_DEVICE_MEMORY_LIMIT"))), flush=True)
    if n != len(limits):
        result(a.tag, False, "process sees %d device(s), expected %d" % (n, len(limits)))
        if a.smi:
            result(a.tag + ".smi", "SKIP", "not checked: the process saw the wrong devices")
        return 1
    devs = []
    for i in range(n):
        p = torch.cuda.get_device_properties(i)
        torch.zeros(1, device=i)
        torch.cuda.synchronize(i)
        devs.append(dict(ordinal=i, uuid=norm_uuid(getattr(p, "uuid", "")), name=p.name,
                         props_total_mib=mib(p.total_memory), limit_mib=limits[i]))
    time.sleep(1.2)  # the library re-measures context memory at most once a second
    for d in devs:
        free, total = torch.cuda.mem_get_info(d["ordinal"])
        d["base_used_mib"] = mib(total - free)
    apps0 = smi_apps()
    for d in devs:
        d["base_real_mib"] = real_mib(apps0, pid, d["uuid"])

    held = []
    for d in devs:
        i, limit = d["ordinal"], d["limit_mib"]
        counts, errors = {}, {}
        for chunk in (a.chunk_mib, a.fine_mib):
            cap = (limit + 2048) // chunk + 2  # a limit not enforced ends the loop, not the GPU
            k, err = 0, "none (stopped at %d MiB above the limit)" % 2048
            while k < cap:
                try:
                    held.append(torch.empty(chunk * MiB, dtype=torch.uint8, device=i))
                    k += 1
                except oom_types:
                    err = "OutOfMemoryError"
                    break
                except RuntimeError as e:
                    err = "RuntimeError: " + str(e).splitlines()[0][:160]
                    break
            counts[chunk], errors[chunk] = k, err
        torch.cuda.synchronize(i)
        time.sleep(1.1)
        free, total = torch.cuda.mem_get_info(i)
        d.update(blocks="%dx%d+%dx%d MiB" % (counts[a.chunk_mib], a.chunk_mib, counts[a.fine_mib], a.fine_mib),
                 error_coarse=errors[a.chunk_mib], error_fine=errors[a.fine_mib],
                 meminfo_total_mib=mib(total), lib_used_mib=mib(total - free), lib_free_mib=mib(free),
                 reserved_mib=mib(torch.cuda.memory_reserved(i)))
    apps = smi_apps()
    region = read_region(region_path)
    for d in devs:
        d["real_mib"] = real_mib(apps, pid, d["uuid"])
        r = region_dev(region, d["uuid"])
        d["region_limit_mib"] = mib(region["devices"][r]["limit"]) if r >= 0 else None
        d["region_used_mib"] = mib(region["devices"][r]["used"]) if r >= 0 else None
    absent_real = {u: real_mib(apps, pid, u) for u in absent}
    # After the fill: the total each device still reports (device 0 full must not change device 1).
    for d in devs:
        free, total = torch.cuda.mem_get_info(d["ordinal"])
        d["after_all_used_mib"] = mib(total - free)
    smi = smi_gpus(dict(os.environ)) if a.smi else None
    if "error" in region:
        print("NOTE %s: region not read: %s" % (a.tag, region["error"]))

    # Verdict per device. `reached` is the process's footprint on the GPU as the driver counts it
    # (nvidia-smi; the library's own count when nvidia-smi cannot see the pid): CUDA context and
    # modules (~0.5 GiB on an H100/H200, which the library measures and charges) + PyTorch's
    # segments. PyTorch's tensors alone therefore stop at limit - context.
    all_ok, parts = True, []
    for d in devs:
        limit = d["limit_mib"]
        reached = d["real_mib"] if d["real_mib"] is not None else d["lib_used_mib"]
        why = []
        if d["meminfo_total_mib"] != limit:
            why.append("cuMemGetInfo total %s != %d" % (d["meminfo_total_mib"], limit))
        if d["props_total_mib"] != limit:
            why.append("totalGlobalMem %s != %d" % (d["props_total_mib"], limit))
        if d["error_fine"] != "OutOfMemoryError":
            why.append("fill ended with %s" % d["error_fine"])
        if reached > limit + a.tol_mib:
            why.append("footprint %d > limit %d" % (reached, limit))
        if reached < limit - a.margin_mib:
            why.append("footprint %d < limit - %d" % (reached, a.margin_mib))
        if d["lib_free_mib"] is not None and d["lib_free_mib"] >= a.fine_mib + 16:
            why.append("library says %d MiB free at OOM" % d["lib_free_mib"])
        if uuids and d["uuid"] != uuids[d["ordinal"]]:
            why.append("runs on GPU %s, expected %s" % (d["uuid"][:8], uuids[d["ordinal"]][:8]))
        if d["region_limit_mib"] is not None and d["region_limit_mib"] != limit:
            why.append("region limit %s" % d["region_limit_mib"])
        if d["region_limit_mib"] is None:
            why.append("no region record for its UUID")
        for other in limits:
            if other != limit and abs(reached - other) <= a.margin_mib:
                why.append("stopped at the other device's limit %d" % other)
        ok = not why
        all_ok &= ok
        parts.append("dev%d(GPU-%s..) limit %d: total %s/%s, footprint %s (real %s, lib %s), tensors %s, "
                     "ctx %s, free@OOM %s%s" % (
                         d["ordinal"], d["uuid"][:8], limit, d["meminfo_total_mib"], d["props_total_mib"],
                         reached, fmt(d["real_mib"]), d["lib_used_mib"], d["reserved_mib"],
                         fmt(d["base_real_mib"] if d["base_real_mib"] is not None else d["base_used_mib"]),
                         d["lib_free_mib"], "" if ok else " [" + "; ".join(why) + "]"))
        print("INFO %s dev%d: %s, ended %s / %s; tensors %d MiB; library used %d of %d MiB "
              "(after all devices: %s); real %s MiB; region limit %s used %s" % (
                  a.tag, d["ordinal"], d["blocks"], d["error_coarse"], d["error_fine"], d["reserved_mib"],
                  d["lib_used_mib"], d["meminfo_total_mib"], d["after_all_used_mib"], fmt(d["real_mib"]),
                  fmt(d["region_limit_mib"]), fmt(d["region_used_mib"])))
    for u, r in absent_real.items():
        if r:  # the process must hold nothing on the GPUs it was not given
            all_ok = False
            parts.append("[%d MiB on GPU-%s.., which it was not given]" % (r, u[:8]))
        else:
            parts.append("nothing on GPU-%s.. (%s)" % (u[:8], "real" if r == 0 else "nvidia-smi n/a"))
    result(a.tag, all_ok, "; ".join(parts))
    if a.smi:
        if smi is None:
            result(a.tag + ".smi", "SKIP", "nvidia-smi under the preload failed")
        else:
            ok, txt = True, []
            for d in devs:
                row = smi.get(d["uuid"])
                good = row is not None and row[1] == d["limit_mib"] and row[2] is not None \
                    and row[2] <= d["limit_mib"]
                ok &= good
                txt.append("GPU %s (dev%d): total %s used %s MiB (limit %d)" % (
                    row[0] if row else "?", d["ordinal"], row[1] if row else "-", row[2] if row else "-",
                    d["limit_mib"]))
            for u in absent:  # informational: NVML lists all GPUs on a bare host (no container runtime)
                row = smi.get(u)
                if row:
                    txt.append("not given GPU %s: total %s (physical expected)" % (row[0], row[1]))
            result(a.tag + ".smi", ok, "nvidia-smi under the preload: " + "; ".join(txt))
    print("JSON " + json.dumps({"tag": a.tag, "devices": devs, "region": region.get("devices")}), flush=True)
    return 0 if all_ok else 1


# ---- part C: NCCL -----------------------------------------------------------------------------------
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cmd_nccl(a):
    """Launcher: 2 ranks, each preloaded, both GPUs visible, limits _0/_1, one region."""
    world = 2
    limits = [int(x) for x in a.limits_mib.split(",")] if a.limits_mib else None
    base_note = ""
    if a.negative_from:
        try:
            pos = json.load(open(a.negative_from))
        except (OSError, ValueError) as e:
            result(a.tag, "SKIP", "no positive-run baseline (%s)" % e)
            return 0
        limits = []
        for r in range(world):
            rk = pos.get("ranks", {}).get(str(r), {})
            p0 = (rk.get("points") or {}).get("p0")
            if not p0 or p0.get("lib_used_mib") is None:
                result(a.tag, "SKIP", "the positive run has no pre-NCCL usage for rank %d" % r)
                return 0
            extra = rk.get("nccl_extra_mib")
            margin = a.margin_mib if extra is None else max(8, min(a.margin_mib, extra // 2))
            limits.append(p0["lib_used_mib"] + margin)
        base_note = " (pre-NCCL usage of the positive run + margin)"
    lib = a.lib
    cache = a.cache
    for p in (cache,):
        try:
            os.unlink(p)
        except OSError:
            pass
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_SM_LIMIT"))}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # one pod granted both GPUs: both visible
    env.update(LD_PRELOAD=lib, CUDA_DEVICE_MEMORY_SHARED_CACHE=cache, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), WORLD_SIZE=str(world), NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NCCL_DEBUG=env.get("NCCL_DEBUG", "WARN"),
               PYTHONUNBUFFERED="1")
    for i, l in enumerate(limits):
        env["CUDA_DEVICE_MEMORY_LIMIT_%d" % i] = "%dm" % l
    if a.negative_from:
        env["LIBCUDA_LOG_LEVEL"] = "2"  # one line per refused allocation
    print("INFO %s: limits %s MiB%s, tensor %d MiB per rank, port %d" % (
        a.tag, "/".join(map(str, limits)), base_note, a.tensor_mib, port), flush=True)
    procs = []
    for r in range(world):
        renv = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        out = "%s.rank%d" % (a.out, r)
        for suffix in (".json", ".err"):
            try:
                os.unlink(out + suffix)
            except OSError:
                pass
        errf = open(out + ".err", "w")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "nccl-rank", "--tag", a.tag,
                              "--tensor-mib", str(a.tensor_mib), "--json", out + ".json",
                              "--pg-timeout", str(a.pg_timeout)],
                             env=renv, stdout=errf, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append((p, errf, out))
    deadline = time.time() + a.timeout
    first_fail = None
    timed_out = False
    while any(p.poll() is None for p, _, _ in procs):
        now = time.time()
        if first_fail is None and any(p.poll() not in (None, 0) for p, _, _ in procs):
            first_fail = now
        if now > deadline or (first_fail is not None and now - first_fail > a.grace):
            timed_out = now > deadline
            for p, _, _ in procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
            break
        time.sleep(0.2)
    ranks, texts = {}, {}
    for r, (p, errf, out) in enumerate(procs):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        errf.close()
        try:
            ranks[r] = json.load(open(out + ".json"))
        except (OSError, ValueError):
            ranks[r] = {}
        ranks[r]["rc"] = p.returncode
        try:
            texts[r] = open(out + ".err", errors="replace").read()
        except OSError:
            texts[r] = ""
    summary = {"tag": a.tag, "limits_mib": limits, "ranks": {str(r): ranks[r] for r in ranks},
               "timed_out": timed_out}

    def pt(r, name, key):
        return ((ranks[r].get("points") or {}).get(name) or {}).get(key)

    if not a.negative_from:
        ok, txt = True, []
        for r in range(world):
            rk = ranks[r]
            p0, p2 = (rk.get("points") or {}).get("p0"), (rk.get("points") or {}).get("p2")
            if not (p0 and p2 and rk.get("sum_ok") is not None):
                ok = False
                err = rk.get("error") or (texts[r].strip().splitlines() or ["no output"])[-1]
                txt.append("rank %d failed at %s (rc %s): %s" % (r, rk.get("stage", "start"), rk["rc"], err[:300]))
                continue
            d_lib = p2["lib_used_mib"] - p0["lib_used_mib"]
            d_res = p2["reserved_mib"] - p0["reserved_mib"]
            extra = d_lib - d_res
            rk["nccl_extra_mib"] = extra
            d_trk = (p2["slot_tracked_mib"] - p0["slot_tracked_mib"]) if p2.get("slot_tracked_mib") is not None \
                and p0.get("slot_tracked_mib") is not None else None
            d_ovh = (p2["slot_overhead_mib"] - p0["slot_overhead_mib"]) if p2.get("slot_overhead_mib") is not None \
                and p0.get("slot_overhead_mib") is not None else None
            real = p2.get("real_mib")
            good = rk.get("sum_ok") and extra >= a.min_extra_mib and (real is None or real <= limits[r])
            ok &= bool(good)
            cross = p2.get("other_gpu_slot_mib")
            txt.append("rank %d (GPU%d, limit %d): sum %s; library used %d -> %s (init) -> %d MiB, torch reserved "
                       "%+d => NCCL charged %+d MiB (tracked allocs %s, measured ctx/module %s); real %s MiB%s%s" % (
                           r, r, limits[r], "ok" if rk.get("sum_ok") else "WRONG", p0["lib_used_mib"],
                           fmt(pt(r, "p1", "lib_used_mib")), p2["lib_used_mib"], d_res, extra,
                           "%+d" % d_trk if d_trk is not None else "n/a",
                           "%+d" % d_ovh if d_ovh is not None else "n/a", fmt(real),
                           "; charged on the other GPU %d MiB" % cross if cross else "",
                           "" if good else " [FAIL: %s]" % ("wrong sum" if not rk.get("sum_ok") else
                                                           "NCCL charged < %d MiB" % a.min_extra_mib
                                                           if extra < a.min_extra_mib else "real > limit")))
        nv = ranks[0].get("nccl_version")
        result(a.tag, ok, ("NCCL %s, %s: " % (nv, ranks[0].get("init_mode", "?")) if nv else "") + "; ".join(txt))
    else:
        completed = all(ranks[r].get("sum_ok") for r in range(world))
        oom = {r: OOM_PAT.search(texts[r] + " " + str(ranks[r].get("error", ""))) for r in range(world)}
        refused = [ln for r in range(world) for ln in texts[r].splitlines() if "refused on device" in ln]
        stages = ", ".join("rank %d: %s rc %s" % (r, ranks[r].get("stage", "start"), ranks[r]["rc"])
                           for r in range(world))
        early = [r for r in range(world)  # failed on their own before NCCL: the limit was too small
                 if ranks[r].get("stage", "start") in ("start", "tensor") and ranks[r].get("error")]
        if early and not completed:
            result(a.tag, "SKIP", "inconclusive: rank(s) %s stopped before NCCL started (%s): %s" % (
                early, stages, " | ".join(str(ranks[r].get("error") or
                                              (texts[r].strip().splitlines() or ["-"])[-1])[:200] for r in early)))
        elif completed:
            over = [r for r in range(world)
                    if (pt(r, "p2", "real_mib") or 0) > limits[r] or (pt(r, "p2", "lib_used_mib") or 0) > limits[r]]
            if over:
                result(a.tag, False, "all_reduce completed and EXCEEDED the limit silently: " + "; ".join(
                    "rank %d real %s / library %s MiB > limit %d" % (r, fmt(pt(r, "p2", "real_mib")),
                                                                     fmt(pt(r, "p2", "lib_used_mib")), limits[r])
                    for r in over))
            else:
                result(a.tag, "SKIP", "inconclusive: NCCL fit within the margin (used %s of limits %s MiB)" % (
                    "/".join(fmt(pt(r, "p2", "lib_used_mib")) for r in range(world)), limits))
        elif any(oom.values()):
            first = next(m.group(0) for m in oom.values() if m)
            result(a.tag, True, "limits %s MiB: NCCL failed with an OOM (%s; %s); library refusals: %d%s" % (
                "/".join(map(str, limits)), first, stages, len(refused),
                (" e.g. '" + refused[0].split("]: ", 1)[-1][:120] + "'") if refused else ""))
        elif timed_out:
            result(a.tag, False, "hung: killed after %d s (%s)" % (a.timeout, stages))
        else:
            errs = [str(ranks[r].get("error") or (texts[r].strip().splitlines() or ["-"])[-1])[:200]
                    for r in range(world)]
            result(a.tag, False, "failed without an OOM (%s): %s" % (stages, " | ".join(errs)))
    try:
        with open(a.out + ".json", "w") as f:
            json.dump(summary, f)
    except OSError:
        pass
    for r in range(world):
        for ln in texts[r].splitlines():
            if ln.startswith(("INFO", "NOTE")):
                print(ln)
    return 0


def cmd_nccl_rank(a):
    import datetime
    import torch
    import torch.distributed as dist
    r, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    pid = os.getpid()
    cache = os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE")
    state = {"rank": r, "pid": pid, "stage": "start", "points": {}}

    def save():
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, a.json)

    def measure(name):
        torch.cuda.synchronize(r)
        time.sleep(1.1)  # lets the library re-measure the context/module memory (NVML, 1/s)
        free, total = torch.cuda.mem_get_info(r)
        region = read_region(cache)
        uuid = state["uuid"]
        trk, ovh = region_slot(region, pid, uuid)
        other = 0
        for u in state.get("all_uuids", []):
            if u != uuid:
                t2, o2 = region_slot(region, pid, u)
                other += (t2 or 0) + (o2 or 0)
        apps = smi_apps()
        p = dict(lib_total_mib=mib(total), lib_used_mib=mib(total - free),
                 reserved_mib=mib(torch.cuda.memory_reserved(r)),
                 slot_tracked_mib=mib(trk), slot_overhead_mib=mib(ovh),
                 other_gpu_slot_mib=mib(other), real_mib=real_mib(apps, pid, uuid))
        state["points"][name] = p
        save()
        print("INFO %s rank %d %s: library used %d of %d MiB, torch reserved %d, slot tracked %s + "
              "overhead %s, real %s" % (a.tag, r, name, p["lib_used_mib"], p["lib_total_mib"], p["reserved_mib"],
                                         fmt(p["slot_tracked_mib"]), fmt(p["slot_overhead_mib"]),
                                         fmt(p["real_mib"])), flush=True)

    try:
        state["stage"] = "tensor"
        torch.cuda.set_device(r)
        dev = torch.device("cuda", r)
        state["all_uuids"] = [norm_uuid(getattr(torch.cuda.get_device_properties(i), "uuid", ""))
                              for i in range(torch.cuda.device_count())]
        state["uuid"] = state["all_uuids"][r]
        try:
            state["nccl_version"] = ".".join(map(str, torch.cuda.nccl.version()))
        except Exception:  # noqa: BLE001
            pass
        n = a.tensor_mib * MiB // 4
        x = torch.full((n,), float(r + 1), dtype=torch.float32, device=dev)
        measure("p0")
        state["stage"] = "init"
        save()
        kw = dict(backend="nccl", rank=r, world_size=world, timeout=datetime.timedelta(seconds=a.pg_timeout))
        try:
            dist.init_process_group(device_id=dev, **kw)  # eager: the communicator exists after this
            state["init_mode"] = "eager init"
        except TypeError:
            dist.init_process_group(**kw)
            state["init_mode"] = "lazy init"
        measure("p1")
        state["stage"] = "all_reduce"
        save()
        dist.all_reduce(x)
        torch.cuda.synchronize(r)
        want = float(world * (world + 1) // 2)
        state["sum_ok"] = bool((x == want).all().item())
        state["sum_sample"] = float(x[0].item())
        measure("p2")
        state["stage"] = "done"
        save()
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001
            pass
        return 0
    except BaseException as e:  # noqa: BLE001  (report whatever stopped the rank)
        state["error"] = "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:1500])
        save()
        print("NOTE %s rank %d failed at %s: %s" % (a.tag, r, state["stage"], state["error"][:400]), flush=True)
        return 1


# ---- part D: SM limits --------------------------------------------------------------------------------
def cmd_sm(a):
    import torch
    devices = [int(x) for x in a.devices.split(",")]
    nwin = a.reps
    rates = {d: [0] * nwin for d in devices}
    per_second = {d: [0] * int(nwin * a.window) for d in devices}
    t0 = [0.0]
    errors = {}

    def start_window():
        t0[0] = time.time() + a.warmup

    barrier = threading.Barrier(len(devices), action=start_window)

    def loop(d):
        try:
            torch.cuda.set_device(d)
            A = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
            B = torch.randn(8192, 8192, device=d, dtype=torch.bfloat16)
            C = torch.empty_like(A)
            for _ in range(3):
                torch.matmul(A, B, out=C)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            errors[d] = str(e)[:300]
            barrier.abort()
            return
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        end = t0[0] + nwin * a.window
        while True:
            for _ in range(4):
                torch.matmul(A, B, out=C)
            torch.cuda.synchronize()
            now = time.time()
            if now >= end:
                return
            if now >= t0[0]:
                rates[d][min(int((now - t0[0]) / a.window), nwin - 1)] += 4
                per_second[d][min(int(now - t0[0]), len(per_second[d]) - 1)] += 4

    threads = [threading.Thread(target=loop, args=(d,), daemon=True) for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=a.warmup + nwin * a.window + 60)
    region = read_region(os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE")) \
        if os.environ.get("CUDA_DEVICE_MEMORY_SHARED_CACHE") else {}
    uuids = {d: norm_uuid(getattr(torch.cuda.get_device_properties(d), "uuid", "")) for d in devices}
    out = {"preloaded": bool(os.environ.get("LD_PRELOAD")), "window_s": a.window, "errors": errors,
           "devices": {str(d): {"uuid": uuids[d], "window_rates": [c / a.window for c in rates[d]],
                                "per_second": per_second[d]} for d in devices},
           "region": region.get("devices"), "region_error": region.get("error")}
    with open(a.out, "w") as f:
        json.dump(out, f)
    for d in devices:
        print("INFO sm %s dev%d: matmul iterations/s per %g-s window: %s" % (
            "limited" if out["preloaded"] else "native", d, a.window,
            " ".join("%.1f" % x for x in out["devices"][str(d)]["window_rates"])), flush=True)
    if errors:
        print("NOTE sm errors: %s" % errors)
    return 1 if errors else 0


STATS_RE = re.compile(r"\[vgpu sm-limit\] pid=(\d+) device=(\d+) limit=(\d+) measure=(\S+) .*?"
                      r"busy_ms=([\d.]+) charged_ms=([\d.]+) .*?throttled_ms=([\d.]+) waits=(\d+)"
                      r".*?records=(\d+)")


def read_stats(path):
    """{device ordinal: the VGPU_SM_STATS line's numbers} from a log."""
    stats = {}
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except (OSError, TypeError):
        return stats
    for m in STATS_RE.finditer(text):
        stats[int(m.group(2))] = dict(limit=int(m.group(3)), measure=m.group(4), busy_ms=float(m.group(5)),
                                      charged_ms=float(m.group(6)), throttled_ms=float(m.group(7)),
                                      waits=int(m.group(8)), records=int(m.group(9)))
    return stats


def cmd_sm_report(a):
    try:
        nat = json.load(open(a.native))
    except (OSError, ValueError) as e:
        result(a.tag, False, "the native reference run failed (%s)" % e)
        return 0
    try:
        lim = json.load(open(a.limited))
    except (OSError, ValueError) as e:
        result(a.tag, False, "no limited run (%s)" % e)
        return 0
    stats = read_stats(a.stats)
    # CUPTI's records reach the limited device? Only decidable when the reference run (both GPUs
    # visible) got records at all: without CUPTI every run measures with events.
    want_records = False
    if a.records_ref:
        ref = read_stats(a.records_ref)
        want_records = any(st["records"] > 0 for st in ref.values())
        if ref and not want_records:
            print("NOTE %s: the reference run had no CUPTI records either (no CUPTI?): records not checked" % a.tag)
    limits = [int(x) for x in a.limits.split(",")]
    ldevs = [int(x) for x in a.devices.split(",")]
    ndevs = [int(x) for x in (a.native_devices or a.devices).split(",")]
    ok, txt = True, []
    for i, (ld, nd, limit) in enumerate(zip(ldevs, ndevs, limits)):
        n = nat["devices"].get(str(nd), {}).get("window_rates") or []
        l = lim["devices"].get(str(ld), {}).get("window_rates") or []
        if not n or not l or statistics.median(n) <= 0:
            ok = False
            txt.append("dev%d: no data" % ld)
            continue
        ref = statistics.median(n)
        shares = [100.0 * x / ref for x in l]
        share = statistics.median(shares)
        agg = 100.0 * sum(l) / (len(l) * ref)
        good = abs(share - limit) <= a.tol
        ok &= good
        uuid = lim["devices"][str(ld)].get("uuid", "")
        rl = [d["sm_limit"] for d in (lim.get("region") or []) if norm_uuid(d["uuid"]) == uuid]
        st = stats.get(ld)
        txt.append("dev%d limit %d: %.1f %% (windows %s; all %.1f %%; native %.1f it/s) region sm_limit %s%s%s" % (
            ld, limit, share, "/".join("%.1f" % s for s in shares), agg, ref, rl[0] if rl else "n/a",
            "; limiter: limit=%d measure=%s records=%d busy %.0f ms throttled %.0f ms waits %d" % (
                st["limit"], st["measure"], st["records"], st["busy_ms"], st["throttled_ms"], st["waits"])
            if st else "; no VGPU_SM_STATS line for this device",
            "" if good else " [outside %d +- %g]" % (limit, a.tol)))
        if st and st["limit"] != limit:
            ok = False
            txt.append("[the limiter applied %d on dev%d, not %d]" % (st["limit"], ld, limit))
        if want_records and st and st["records"] == 0:
            ok = False
            txt.append("[dev%d: no CUPTI kernel records reached the limited device]" % ld)
    result(a.tag, ok, "; ".join(txt))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("alloc")
    s.add_argument("--tag", required=True)
    s.add_argument("--limits-mib", required=True, help="expected limit per visible device, in order")
    s.add_argument("--uuids", help="expected GPU UUID per visible device (nvidia-smi's)")
    s.add_argument("--absent", help="GPUs the process must hold nothing on")
    s.add_argument("--chunk-mib", type=int, default=256)
    s.add_argument("--fine-mib", type=int, default=16)
    s.add_argument("--margin-mib", type=int, default=300)
    s.add_argument("--tol-mib", type=int, default=2)
    s.add_argument("--smi", action="store_true")
    s = sub.add_parser("nccl")
    s.add_argument("--tag", required=True)
    s.add_argument("--lib", required=True)
    s.add_argument("--cache", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--limits-mib")
    s.add_argument("--negative-from")
    s.add_argument("--margin-mib", type=int, default=50)
    s.add_argument("--min-extra-mib", type=int, default=8)
    s.add_argument("--tensor-mib", type=int, default=256)
    s.add_argument("--timeout", type=float, default=90)
    s.add_argument("--grace", type=float, default=15, help="s to wait for the other rank after one failed")
    s.add_argument("--pg-timeout", type=int, default=60)
    s = sub.add_parser("nccl-rank")
    s.add_argument("--tag", required=True)
    s.add_argument("--tensor-mib", type=int, default=256)
    s.add_argument("--json", required=True)
    s.add_argument("--pg-timeout", type=int, default=60)
    s = sub.add_parser("sm")
    s.add_argument("--devices", default="0,1")
    s.add_argument("--warmup", type=float, default=5)
    s.add_argument("--window", type=float, default=5)
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--out", required=True)
    s = sub.add_parser("sm-report")
    s.add_argument("--tag", default="D")
    s.add_argument("--native", required=True)
    s.add_argument("--limited", required=True)
    s.add_argument("--stats", default="")
    s.add_argument("--limits", required=True)
    s.add_argument("--devices", default="0,1", help="the limited run's ordinals, in --limits order")
    s.add_argument("--native-devices", help="the native run's ordinals for the same GPUs (default --devices)")
    s.add_argument("--tol", type=float, default=3.0)
    s.add_argument("--records-ref", help="stats log of a run whose CUPTI records prove CUPTI works: then "
                   "a limited device without records fails")
    a = p.parse_args()
    fn = {"alloc": cmd_alloc, "nccl": cmd_nccl, "nccl-rank": cmd_nccl_rank, "sm": cmd_sm,
          "sm-report": cmd_sm_report}.get(a.cmd)
    if fn is None:
        p.print_help()
        return 2
    return fn(a)


if __name__ == "__main__":
    sys.exit(main())
