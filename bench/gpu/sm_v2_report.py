"""Tables and acceptance checks of sm_v2_bench.sh, read from its raw files; runs alone too:

  python3 sm_v2_report.py PART OUT       # PART: calib train pair infer-alone infer-pair ...
  python3 sm_v2_report.py PART OUT OUT...  # the same over the repetitions of several invocations
  python3 sm_v2_report.py infer-rate OUT # the open-loop rate for ~INFER_DEMAND % of the GPU
  python3 sm_v2_report.py ovh-limit OUT  # a limit that does not bind the train loop
  python3 sm_v2_report.py nvml FILE      # sampler: per-process SM utilisation (NVML), jsonl
  python3 sm_v2_report.py ovh-ci OUT [OUT...]  # overhead parts, pooled over invocations: paired
                                         # ratios, bootstrap 95 % intervals, A/A beside them

Raw layout (OUT/raw): <group>.r<rep>.spec ("group rep start end lockdir" then one line per
tenant "i kind limit container pid"), <group>.r<rep>.<i>.json (the tenant's JSON line) and .err.
A tenant's GPU-busy share = its rate x GPU time per unit (calib) x 100, in % of the GPU. The
native U used in the formulas is the native rate of the same invocation x GPU time per unit
(the profiler slows a host-bound loop, so the profiled U reads low; both are printed).
charged/kernels: what the limiter charged a limited tenant over its whole run (busy_ms of its
VGPU_SM_STATS line) per GPU time of every unit it ran (units_total x GPU time per unit): 1 is
exact, well below 1 means it was undercharged and may exceed its limit.
"""
import glob
import json
import os
import re
import statistics
import sys
import time

OUT = sys.argv[2] if len(sys.argv) > 2 else "/tmp/vgpu-sm-v2"
RAW = os.path.join(OUT, "raw")
# A part's report pools the repetitions of every OUT given (the first one is OUT).
OUTS = sys.argv[2:] or [OUT]
CHECKS = []


def load_json(path):
    try:
        with open(path) as f:
            return json.loads(f.read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def sm_lines(err_path):
    """The SM limiter's lines of a tenant's stderr: its VGPU_SM_STATS lines ('[vgpu sm-limit]')
    and its warnings ('[vgpu WARN(pid N)]: sm-limit: ...'; '[vgpu sm-limit] pid N: ...' before
    the library's one logger carried them)."""
    try:
        with open(err_path, errors="replace") as f:
            return [l.rstrip() for l in f
                    if l.startswith("[vgpu sm-limit]") or "]: sm-limit: " in l]
    except OSError:
        return []


def stats_of(lines):
    """key value / key=value pairs of the stats line(s), tolerant of the format; max_wait_ms also
    from 'max wait 12.3 ms'. Numbers only; several lines: the largest value per key."""
    kv = {}
    for line in lines:
        pairs = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)[ =:]+(-?[0-9]+(?:\.[0-9]+)?)", line)
        m = re.search(r"max[ _]wait(?:_ms)?[ =:]+([0-9.]+)", line)
        if m:
            pairs.append(("max_wait_ms", m.group(1)))
        for k, v in pairs:
            kv[k] = max(kv.get(k, float("-inf")), float(v))
    return kv


def is_stats(line):
    return "max_wait" in line or "launches" in line


class Tenant:
    def __init__(self, group_tag, fields, raw=RAW):
        self.i, self.kind, self.limit, self.box = fields[0], fields[1], fields[2], fields[3]
        self.pid = int(fields[4]) if len(fields) > 4 else 0
        base = os.path.join(raw, "%s.%s" % (group_tag, self.i))
        self.res = load_json(base + ".json") or {}
        self.lines = sm_lines(base + ".err")
        self.stats = stats_of([l for l in self.lines if is_stats(l)])
        self.warnings = [l for l in self.lines if not is_stats(l)]
        self.rate = self.res.get("rate")
        self.err_path = base + ".err"

    def L(self):
        return int(self.limit) if self.limit.isdigit() else None


def runs(group):
    """The repetitions of a group: list of (start, end, lockdir, [Tenant])."""
    res = []
    for raw in (os.path.join(o, "raw") for o in OUTS):
        for spec in sorted(glob.glob(os.path.join(raw, group + ".r*.spec"))):
            tag = os.path.basename(spec)[:-5]
            if tag.rsplit(".r", 1)[0] != group:
                continue
            with open(spec) as f:
                head, *rest = [l.split() for l in f if l.strip()]
            res.append((float(head[2]), float(head[3]), head[4], [Tenant(tag, r, raw) for r in rest]))
    return res


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(xs, f="%.1f"):
    """median [min-max] of the repetitions."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return f % xs[0]
    return (f + " [" + f + "-" + f + "]") % (statistics.median(xs), min(xs), max(xs))


def check(name, value, formula, ok):
    CHECKS.append((name, value, formula, "PASS" if ok else ("FAIL" if ok is not None else "n/a")))


def summary(title):
    print("\n== summary: %s" % title)
    if not CHECKS:
        print("(no results)")
        return
    w = [max(len(c[k]) for c in CHECKS) for k in range(3)]
    for c in CHECKS:
        print("%-4s  %-*s  %-*s  %s" % (c[3], w[0], c[0], w[1], c[1], c[2]))
    fails = sum(c[3] == "FAIL" for c in CHECKS)
    print("%d checks, %d failed, %d without data" % (len(CHECKS), fails, sum(c[3] == "n/a" for c in CHECKS)))


def calib(kind):
    """Medians of a kind's calibration runs: U (unprofiled rate x GPU time per unit), U under the
    profiler, GPU s per unit."""
    rs = [t.res for _, _, _, ts in runs("calib_" + kind) for t in ts if "gpu_ms_per_unit" in t.res]
    if not rs:
        return None
    return {"U": med([r["U"] for r in rs]), "Up": med([r.get("U_profiled") for r in rs]),
            "g": med([r["gpu_ms_per_unit"] for r in rs]) / 1000, "all": rs}


def nvml_sm(t, start, end):
    """Mean per-process SM utilisation NVML reported for the tenant's pid inside the window."""
    if not t.pid:
        return None
    vals = []
    for out in OUTS:
        path = os.path.join(out, "nvml.jsonl")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if d.get("pid") == t.pid and start <= d["t"] < end:
                    vals.append(d["sm"])
    return statistics.mean(vals) if vals else None


def tenants(group, i):
    """Tenant i of every repetition of a group, with its window."""
    return [(s, e, ts[i]) for s, e, _, ts in runs(group) if len(ts) > i]


def rates(group, i=0):
    return [t.rate for _, _, t in tenants(group, i)]


def flag_late(group):
    for s, e, lock, ts in runs(group):
        for t in ts:
            if not t.res:
                print("  !! %s tenant %s (%s) produced no result; stderr: %s" % (group, t.i, t.kind, t.err_path))
            elif t.res.get("late_s", 0) > 0.5:
                print("  !! %s tenant %s was %.1f s late for the window (set up in %.1f s; raise WARM)" % (
                    group, t.i, t.res["late_s"], t.res.get("setup_s", float("nan"))))


def charged_of_kernels(t, gk):
    """What the limiter charged a tenant over its whole run (VGPU_SM_STATS busy_ms) per GPU time of
    its kernels (every unit it ran, warm-up included, x the calibration's GPU time per unit): 1 is
    exact, below 1 undercharged. None without the numbers."""
    busy_ms, units = t.stats.get("busy_ms"), t.res.get("units_total")
    if busy_ms is None or not units or not gk:
        return None
    return busy_ms / 1000.0 / (units * gk)


def table(groups, g=None):
    """One row per tenant of each group: rate, share of the GPU (needs g = GPU s per unit of that
    tenant's kind, a dict kind -> s), latency, NVML SM %, stats, and what the limiter charged per
    GPU time of the tenant's kernels."""
    print("%-18s %-3s %-12s %-6s %-22s %-20s %-20s %-14s %-20s %s" % (
        "group", "i", "kind", "limit", "rate/s med [min-max]", "GPU share %", "p99 ms", "nvml SM %", "max_wait_ms",
        "charged/kernels"))
    for grp in groups:
        flag_late(grp)
        rs = runs(grp)
        if not rs:
            print("%-18s (not run)" % grp)
            continue
        for i in range(len(rs[0][3])):
            tt = tenants(grp, i)
            t0 = tt[0][2]
            gk = (g or {}).get(t0.kind)
            share = [t.rate * gk * 100 if (t.rate is not None and gk) else None for _, _, t in tt]
            print("%-18s %-3s %-12s %-6s %-22s %-20s %-20s %-14s %-20s %s" % (
                grp, t0.i, t0.kind, t0.limit, fmt([t.rate for _, _, t in tt], "%.2f"), fmt(share),
                fmt([t.res.get("p99_ms") for _, _, t in tt]), fmt([nvml_sm(t, s, e) for s, e, t in tt]),
                fmt([t.stats.get("max_wait_ms") for _, _, t in tt]),
                fmt([charged_of_kernels(t, gk) for _, _, t in tt], "%.2f")))


def gpu_s(*kinds):
    return {k: c["g"] for k in kinds for c in [calib(k)] if c}


def train_checks(native_group, limited, label=""):
    """The train formula for (group, L) pairs against native_group: steps/s >= 0.9 min(1, L/U)
    native, share <= L + 3."""
    c = calib("train")
    native = med(rates(native_group))
    U = native * c["g"] if (c and native) else None
    if U:
        print("train: native %.2f steps/s, GPU %.2f ms/step (calib) -> U %.1f %% (profiled U %.1f %%)" % (
            native, 1000 * c["g"], 100 * U, 100 * c["Up"]))
    for grp, L in limited:
        r = med(rates(grp))
        bound = 0.9 * min(1.0, L / 100.0 / U) * native if (U and native) else None
        check("%s%s steps/s" % (label, grp), "%.2f" % r if r else "-",
              ">= 0.9*min(1,L/U)*native = %s" % ("%.2f" % bound if bound else "-"),
              r >= bound if (r and bound) else None)
        share = r * c["g"] * 100 if (r and c) else None
        check("%s%s GPU share" % (label, grp), "%.1f %%" % share if share else "-", "<= L+3 = %d" % (L + 3),
              share <= L + 3 if share else None)


def part_calib():
    print("%-13s %-22s %-22s %-22s %-24s %s" % ("kind", "U % med [min-max]", "U % under profiler", "GPU ms/unit",
                                                 "rate/s native, profiled", "kernels"))
    want = {"train": (0.40, 0.70), "train-sat": (0.90, 1.01), "infer-closed": (0.80, 1.01),
            "infer-open": (0.25, 0.35)}
    for kind in ("train", "train-sat", "infer-closed", "infer-open", "matmul", "small"):
        c = calib(kind)
        if not c:
            continue
        print("%-13s %-22s %-22s %-22s %-24s %s" % (
            kind, fmt([100 * r["U"] for r in c["all"]]), fmt([100 * r["U_profiled"] for r in c["all"]]),
            fmt([r["gpu_ms_per_unit"] for r in c["all"]], "%.3f"),
            "%s, %s" % (fmt([r["rate_native"] for r in c["all"]], "%.1f"), fmt([r["rate_profiled"] for r in c["all"]], "%.1f")),
            fmt([r["kernels"] for r in c["all"]], "%d")))
        if kind in want:
            lo, hi = want[kind]
            check("calib %s U" % kind, "%.1f %%" % (100 * c["U"]), "assumed %d-%d %% (else tune the size)" % (
                100 * lo, 100 * hi), lo <= c["U"] <= hi)
    c = calib("infer-closed")
    if c:
        ms = 1000 * c["g"]
        check("calib infer request GPU time", "%.2f ms" % ms, "assumed 5-10 ms", 5 <= ms <= 10)


def infer_rate():
    """Requests/s so that the open-loop tenant asks for INFER_DEMAND % (default 30) of the GPU."""
    demand = float(os.environ.get("INFER_DEMAND", "30")) / 100
    c = calib("infer-closed")
    print("%.2f" % (demand / c["g"] if c else 40.0))


def ovh_limit():
    c = calib("train")
    print(90 if (not c or c["U"] < 0.8) else 99)


def with_prev(groups):
    """The groups, each followed by its run with LIBVGPU_PREV (NAME_prev) where there is one."""
    return [x for g in groups for x in (g, g + "_prev") if x == g or runs(x)]


def part_train():
    table(with_prev(["train_native", "train_30", "train_50"]), gpu_s("train"))
    train_checks("train_native", [(g, L) for g, L in (("train_30", 30), ("train_50", 50),
                                                      ("train_30_prev", 30), ("train_50_prev", 50))
                                  if runs(g) or not g.endswith("_prev")])


def part_pair():
    groups = ["pair_native", "pair_50_50", "pair_30_70"]
    table(with_prev(groups), gpu_s("train"))
    c = calib("train")
    ref = [med(rates("pair_native", i)) for i in (0, 1)]
    for suffix in ("", "_prev"):
        if suffix and not runs("pair_50_50" + suffix) and not runs("pair_30_70" + suffix):
            continue
        for i in (0, 1):
            r = med(rates("pair_50_50" + suffix, i))
            check("pair_50_50%s tenant %d steps/s" % (suffix, i), "%.2f" % r if r else "-",
                  ">= 0.85 * unlimited pair = %s" % ("%.2f" % (0.85 * ref[i]) if ref[i] else "-"),
                  r >= 0.85 * ref[i] if (r and ref[i]) else None)
        total = []
        for i, L in ((0, 30), (1, 70)):
            r = med(rates("pair_30_70" + suffix, i))
            total.append(r)
            share = r * c["g"] * 100 if (r and c) else None
            check("pair_30_70%s tenant %d GPU share" % (suffix, i), "%.1f %%" % share if share else "-",
                  "<= L+3 = %d" % (L + 3), share <= L + 3 if share else None)
        ok = None not in total + ref
        check("pair_30_70%s combined steps/s" % suffix, "%.2f" % sum(total) if ok else "-",
              ">= 0.85 * unlimited pair = %s" % ("%.2f" % (0.85 * sum(ref)) if ok else "-"),
              sum(total) >= 0.85 * sum(ref) if ok else None)


def p99(group, i=0):
    return med([t.res.get("p99_ms") for _, _, t in tenants(group, i)])


def part_infer_alone():
    table(["inf_native", "inf_50"], gpu_s("infer-open"))
    n, l = p99("inf_native"), p99("inf_50")
    print("max latency ms: native %s, limit 50 %s" % (
        fmt([t.res.get("max_ms") for _, _, t in tenants("inf_native", 0)]),
        fmt([t.res.get("max_ms") for _, _, t in tenants("inf_50", 0)])))
    check("inf_50 p99", "%.1f ms" % l if l else "-", "<= 1.5*native p99 + 5 = %s" % (
        "%.1f" % (1.5 * n + 5) if n else "-"), l <= 1.5 * n + 5 if (l and n) else None)


def part_infer_pair():
    table(with_prev(["infp_native", "infp_50_50"]), gpu_s("infer-open", "train-sat"))
    n = p99("infp_native")
    for grp in [g for g in with_prev(["infp_50_50"])]:
        l = p99(grp)
        lat_max = [t.res.get("max_ms") for _, _, t in tenants(grp, 0)]
        print("infer max latency ms: unlimited pair %s, %s %s" % (
            fmt([t.res.get("max_ms") for _, _, t in tenants("infp_native", 0)]), grp, fmt(lat_max)))
        check("%s infer p99" % grp, "%.1f ms" % l if l else "-", "<= 2*unlimited-pair p99 = %s" % (
            "%.1f" % (2 * n) if n else "-"), l <= 2 * n if (l and n) else None)
        waits = [t.stats.get("max_wait_ms") for _, _, t in tenants(grp, 0)]
        waits = [w for w in waits if w is not None]
        check("%s infer largest budget wait" % grp, "%.1f ms" % max(waits) if waits else "- (no max_wait_ms)",
              "<= 100 ms (max over reps; stats line)", max(waits) <= 100 if waits else None)
        c = calib("train-sat")
        r = med(rates(grp, 1))
        share = r * c["g"] * 100 if (r and c) else None
        check("%s train-sat GPU share" % grp, "%.1f %%" % share if share else "-", "<= L+3 = 53",
              share <= 53 if share else None)


def part_infer_closed():
    table(["infc_native", "infc_30"], gpu_s("infer-closed"))
    c = calib("infer-closed")
    n, r = med(rates("infc_native")), med(rates("infc_30"))
    U = n * c["g"] if (n and c) else None
    if U:
        print("infer-closed: native %.2f req/s, GPU %.2f ms/request -> U %.1f %% (profiled %.1f %%)" % (
            n, 1000 * c["g"], 100 * U, 100 * c["Up"]))
    want = min(1.0, 0.30 / U) * n if U else None
    check("infc_30 requests/s", "%.2f" % r if r else "-", "within 10 %% of min(1,30/U)*native = %s" % (
        "%.2f" % want if want else "-"), abs(r - want) <= 0.1 * want if (r and want) else None)
    pn, pl = p99("infc_native"), p99("infc_30")
    check("infc_30 p99", "%.1f ms" % pl if pl else "-", "<= 3*native p99*(100/30) = %s" % (
        "%.1f" % (10 * pn) if pn else "-"), pl <= 10 * pn if (pl and pn) else None)


def part_overhead(kind):
    groups = sorted({os.path.basename(p).split(".r")[0] for p in glob.glob(os.path.join(RAW, "ovh_%s_*.spec" % kind))})
    if not groups:
        print("(not run)")
        return
    by_round = {}
    for grp in groups:
        flag_late(grp)
        cfg = grp[len("ovh_%s_" % kind):]
        for spec in glob.glob(os.path.join(RAW, grp + ".r*.spec")):
            rep = spec.rsplit(".r", 1)[1][:-5]
            t = Tenant(os.path.basename(spec)[:-5], open(spec).read().splitlines()[1].split())
            by_round.setdefault(rep, {})[cfg] = t.rate
    cfgs = [c for c in ("native", "preload") if c in {c for r in by_round.values() for c in r}]
    cfgs += sorted({c for r in by_round.values() for c in r} - set(cfgs))
    print("rates per round (%s/s): %s" % (kind, ", ".join(cfgs)))
    for rep in sorted(by_round, key=int):
        print("  round %s: %s" % (rep, "  ".join("%.1f" % by_round[rep][c] if by_round[rep].get(c) else "-"
                                                 for c in cfgs)))
    for c in cfgs[1:]:
        slow = [100 * (1 - r[c] / r["native"]) for r in by_round.values() if r.get(c) and r.get("native")]
        if c.startswith("native"):  # OVH_AA=1: A/A control, native again; its spread is the resolution floor
            print("A/A %s vs native (paired per round): %s %%; median |diff| %.2f %%" % (
                c, fmt(slow, "%+.2f"), med([abs(x) for x in slow]) or 0.0))
            continue
        bound = 1.0 if c == "preload" else 2.0
        m = med(slow)
        check("%s %s slowdown (paired per round)" % (kind, c), fmt(slow, "%+.2f") + " %",
              "median <= %.0f %%" % bound, m <= bound if m is not None else None)


def ovh_rounds(out, kind):
    """{(out, round): {config: result JSON}} of one invocation's overhead part `kind`."""
    by_round = {}
    raw = os.path.join(out, "raw")
    for spec in glob.glob(os.path.join(raw, "ovh_%s_*.r*.spec" % kind)):
        tag = os.path.basename(spec)[:-5]
        grp, rep = tag.rsplit(".r", 1)
        res = load_json(os.path.join(raw, tag + ".0.json"))
        if res and res.get("rate"):
            by_round.setdefault((out, int(rep)), {})[grp[len("ovh_%s_" % kind):]] = res
    return by_round


def median_ci(xs, boot=10000, seed=1):
    """95 % intervals of the median: percentile bootstrap (resampling the rounds) and the
    distribution-free one from order statistics (binomial, coverage >= 95 %; None if n < 6)."""
    import random
    rng, n = random.Random(seed), len(xs)
    meds = sorted(statistics.median(rng.choices(xs, k=n)) for _ in range(boot))
    bs = (meds[int(0.025 * boot)], meds[int(0.975 * boot) - 1])
    from math import comb
    k, cum = 0, 0.0  # largest k with P(Bin(n, 1/2) < k) <= 2.5 %: [x_(k), x_(n+1-k)]
    while cum + comb(n, k) / 2.0 ** n <= 0.025:
        cum += comb(n, k) / 2.0 ** n
        k += 1
    ys = sorted(xs)
    return bs, ((ys[k - 1], ys[n - k]) if k >= 1 else None)


def ovh_ci(outs):
    """Overhead = 100 x (native rate / configuration's rate - 1): the extra time the same work
    takes, paired with the native process of the same round (positive = slower). native2 (OVH_AA=1)
    is the A/A control: its interval is what the design can resolve. A configuration passes when
    its interval's upper bound is within the bound (1 % without a limit, 2 % with one), fails when
    its lower bound is above it, and is undecided otherwise."""
    for kind in ("small", "train"):
        rounds = {}
        for out in outs:
            rounds.update(ovh_rounds(out, kind))
        if not rounds:
            continue
        cfgs = sorted({c for r in rounds.values() for c in r} - {"native"},
                      key=lambda c: (c != "native2", c != "preload", c))
        print("== overhead-%s: %d rounds from %s" % (kind, len(rounds), " ".join(outs)))
        print("%-9s %6s %10s %9s %19s %19s %s" % ("config", "rounds", "rate/s", "overhead", "bootstrap 95 % CI",
                                                 "order-stat CI", "verdict"))
        nat = [r["native"]["rate"] for r in rounds.values() if "native" in r]
        print("%-9s %6d %10.1f" % ("native", len(nat), statistics.median(nat)))
        aa = None
        for c in cfgs:
            xs = [100 * (r["native"]["rate"] / r[c]["rate"] - 1) for r in rounds.values() if "native" in r and c in r]
            if len(xs) < 3:
                continue
            (blo, bhi), oci = median_ci(xs)
            m = statistics.median(xs)
            if c == "native2":
                aa, verdict = (blo, bhi), "A/A control"
            else:
                bound = 1.0 if c in ("preload", "none") else 2.0
                verdict = ("PASS (upper %.2f <= %.0f)" % (bhi, bound) if bhi <= bound else
                           "FAIL (lower %.2f > %.0f)" % (blo, bound) if blo > bound else
                           "undecided (interval holds %.0f)" % bound)
            print("%-9s %6d %10.1f %+8.2f%% [%+6.2f, %+6.2f] %% %19s %s" % (
                c, len(xs), statistics.median([r[c]["rate"] for r in rounds.values() if c in r]), m, blo, bhi,
                "[%+.2f, %+.2f] %%" % oci if oci else "-", verdict))
        if aa:
            print("A/A interval [%+.2f, %+.2f] %% (width %.2f points): differences smaller than that are not"
                  " resolved" % (aa[0], aa[1], aa[1] - aa[0]))
        per = [r for rr in rounds.values() for r in rr.values()]
        cvs = [100 * statistics.pstdev(p["block_rates"]) / statistics.mean(p["block_rates"]) for p in per
               if len(p.get("block_rates") or []) > 1]
        steal = [p["steal_pct"] for p in per if "steal_pct" in p]
        if cvs:
            print("within a process: tenths' rate CV median %.2f %% [%.2f-%.2f]" % (
                statistics.median(cvs), min(cvs), max(cvs)))
        if steal:
            print("steal on the pinned CPUs during the measured work: median %.2f %% [%.2f-%.2f]" % (
                statistics.median(steal), min(steal), max(steal)))
        setup = {}
        for r in rounds.values():
            for c, p in r.items():
                if p.get("setup_s") is not None:
                    setup.setdefault(c, []).append(p["setup_s"])
        if setup:
            print("start-up to the first two units done (s), median per config: %s" % ", ".join(
                "%s %.2f" % (c, statistics.median(v)) for c, v in sorted(setup.items())))
        allr = {}
        for r in rounds.values():
            for c, p in r.items():
                allr.setdefault(c, []).append(p["rate"])
        print("between processes, per config: CV %s" % ", ".join(
            "%s %.2f %%" % (c, 100 * statistics.pstdev(v) / statistics.mean(v)) for c, v in sorted(allr.items())
            if len(v) > 1))
        print("per round (overhead vs native %%): %s" % ", ".join(cfgs))
        for key in sorted(rounds, key=lambda k: (outs.index(k[0]), k[1])):
            r = rounds[key]
            if "native" in r:
                print("  %s r%-3d %s" % (os.path.basename(key[0].rstrip("/")), key[1], "  ".join(
                    "%+7.2f" % (100 * (r["native"]["rate"] / r[c]["rate"] - 1)) if c in r else "      -"
                    for c in cfgs)))
        print()


def part_cost():
    """What a limit that does not bind costs the train loop, and which threads spend the CPU."""
    groups = ["cost_native", "cost_none", "cost_30", "cost_50", "cost_90", "cost_50_prev", "cost_50_events",
              "cost_native_2cpu", "cost_50_2cpu"]
    groups = [g for g in groups if runs(g)]
    table(groups, gpu_s("train"))
    print("\nCPU per thread over the window, %% of one core (median of the repetitions; > 1 %%):")
    for grp in groups:
        tt = tenants(grp, 0)
        names = sorted({k for _, _, t in tt for k in t.res.get("cpu_pct", {})})
        cpu = {k: med([t.res.get("cpu_pct", {}).get(k, 0.0) for _, _, t in tt]) for k in names}
        total = med([sum(t.res.get("cpu_pct", {}).values()) for _, _, t in tt])
        busy = ", ".join("%s %.1f" % (k, v) for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v > 1)
        measure = sorted({l.split("measure=")[1].split()[0] for _, _, t in tt for l in t.lines if "measure=" in l})
        mcpu = fmt([t.stats.get("measuring_cpu_ms") for _, _, t in tt])
        print("  %-18s total %s  %s  measure %s, measuring thread CPU ms (whole run) %s" % (
            grp, "%.0f" % total if total else "-", busy, "/".join(measure) or "-", mcpu))
    native = med(rates("cost_native"))
    native2 = med(rates("cost_native_2cpu"))
    for grp, ref in (("cost_none", native), ("cost_90", native), ("cost_50", native), ("cost_50_prev", native),
                     ("cost_50_events", native), ("cost_50_2cpu", native2)):
        r = med(rates(grp))
        if r is None:
            continue
        slow = 100 * (1 - r / ref) if (r and ref) else None
        bound = 1.0 if grp == "cost_none" else 2.0
        check("%s slowdown vs native (medians)" % grp, "%+.1f %%" % slow if slow is not None else "-",
              "<= %.0f %%" % bound, slow <= bound if slow is not None else None)
    train_checks("cost_native", [(g, L) for g, L in (("cost_30", 30), ("cost_50", 50)) if runs(g)])


def part_robust_lock():
    table(["lock_native", "lock_absent_30", "lock_present_30"], gpu_s("train"))
    train_checks("lock_native", [("lock_absent_30", 30), ("lock_present_30", 30)])


def part_robust_shared():
    table(["shared_30"], gpu_s("train"))
    c = calib("train")
    total = [sum(t.rate for t in ts) if all(t.rate for t in ts) else None for _, _, _, ts in runs("shared_30")]
    share = [x * c["g"] * 100 if (x and c) else None for x in total]
    m = med(share)
    check("shared_30 two processes, combined GPU share", fmt(share) + " %", "<= 33", m <= 33 if m else None)


def part_robust_profiler():
    table(["prof_native", "prof_30"], gpu_s("train"))
    for grp in ("prof_native", "prof_30"):
        for _, _, t in tenants(grp, 0):
            print("%s: profiler saw %s kernels, kernel union over its whole run (warm-up included) %s" % (
                grp, t.res.get("profiler_kernels"), "%.1f %%" % (100 * t.res["profiler_busy_whole_run"])
                if "profiler_busy_whole_run" in t.res else "-"))
    warned = []
    for _, _, t in tenants("prof_30", 0):
        for w in t.warnings:
            print("  warning line: " + w)
        warned.append(bool(t.warnings))
    print("SM limiter warning line in stderr: %s" % (
        ", ".join("yes" if w else "no" for w in warned) or "-"))
    train_checks("prof_native", [("prof_30", 30)], "with profiler: ")


def part_matmul():
    """Shares of sm_limit_bench.sh's matmul part, per repetition directory OUT/matmul/r<N> (every OUT),
    and, when sm_v2_bench.sh ran it with LIBVGPU_PREV too, OUT/matmul-prev/r<N>."""
    for sub in ("matmul", "matmul-prev"):
        if sub == "matmul" or any(glob.glob(os.path.join(out, sub, "r*")) for out in OUTS):
            if sub != "matmul":
                print("\nwith LIBVGPU_PREV (%s):" % sub)
            matmul_shares(sub)


def matmul_shares(sub):
    label = "" if sub == "matmul" else " (prev)"
    rows = [("matmul_10", [10]), ("matmul_30", [30]), ("matmul_50", [50]), ("matmul_70", [70]),
            ("graph_30", [30]), ("pair_30_70", [30, 70]), ("trio_20_30_50", [20, 30, 50])]
    shares, waits = {}, {}
    for d in sorted(d for out in OUTS for d in glob.glob(os.path.join(out, sub, "r*")) if os.path.isdir(d)):
        def rate(name, i=0):
            return (load_json(os.path.join(d, "%s-%d.json" % (name, i))) or {}).get("iters_per_s")

        def base_rate(name):
            # The median second: a native reference whose first second was still warming up (44
            # of ~600 iterations, H200, 2026-11-29) made every share of its run read 6 % high.
            j = load_json(os.path.join(d, "%s-0.json" % name)) or {}
            return med(j["per_second"]) if j.get("per_second") else j.get("iters_per_s")
        for name, targets in rows:
            work = "graph" if name.startswith("graph") else "matmul"
            base = [base_rate("base_" + work), base_rate("base2_" + work)]
            if None in base:
                continue
            for i, L in enumerate(targets):
                r = rate(name, i)
                shares.setdefault((name, i, L), []).append(100 * r / statistics.mean(base) if r else None)
                st = stats_of(sm_lines(os.path.join(d, "%s-%d.err" % (name, i))))
                waits.setdefault((name, i, L), []).append(st.get("max_wait_ms"))
    print("%-16s %-3s %-6s %-24s %s" % ("scenario", "i", "limit", "share % med [min-max]", "max_wait_ms"))
    for (name, i, L), xs in sorted(shares.items(), key=lambda kv: [r[0] for r in rows].index(kv[0][0])):
        print("%-16s %-3d %-6d %-24s %s" % (name, i, L, fmt(xs), fmt(waits[(name, i, L)])))
        m = med(xs)
        check("%s%s tenant %d share" % (name, label, i), fmt(xs) + " %", "within L+-3 = %d-%d" % (L - 3, L + 3),
              abs(m - L) <= 3 if m is not None else None)


def nvml(path):
    """Per-process SM utilisation samples (the driver's own ~1/6 s samples), polled each second."""
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    last = 0
    with open(path, "a") as f:
        while True:
            try:
                for s in pynvml.nvmlDeviceGetProcessUtilization(h, last):
                    last = max(last, s.timeStamp)
                    f.write(json.dumps({"t": s.timeStamp / 1e6, "pid": s.pid, "sm": s.smUtil}) + "\n")
                f.flush()
            except pynvml.NVMLError:
                pass  # no samples since `last` (or not supported): nothing to write
            time.sleep(1.0)


PARTS = {
    "calib": part_calib, "train": part_train, "pair": part_pair, "infer-alone": part_infer_alone,
    "infer-pair": part_infer_pair, "infer-closed": part_infer_closed, "matmul": part_matmul,
    "overhead-small": lambda: part_overhead("small"), "overhead-train": lambda: part_overhead("train"),
    "robust-lock": part_robust_lock, "robust-shared": part_robust_shared,
    "robust-profiler": part_robust_profiler, "cost": part_cost,
}

if __name__ == "__main__":
    what = sys.argv[1]
    if what == "nvml":
        nvml(sys.argv[2])
    elif what == "infer-rate":
        infer_rate()
    elif what == "ovh-limit":
        ovh_limit()
    elif what == "ovh-ci":
        ovh_ci(sys.argv[2:])
    else:
        if what.startswith("overhead-") and len(OUTS) > 1:
            sys.exit("%s reads one invocation; pool overhead rounds with: sm_v2_report.py ovh-ci OUT..." % what)
        print("== %s (%s)" % (what, " ".join(OUTS)))
        PARTS[what]()
        summary(what)
