"""Report of bench/gpu/mps_bench.sh: median [min-max] over rounds per group and tenant, and the
MPS mode's acceptance checks (issue 44). usage: mps_report.py RAW_DIR"""
import glob
import json
import os
import re
import statistics
import sys

raw = sys.argv[1]
runs = {}  # group -> round -> tenant index -> result
for path in glob.glob(os.path.join(raw, "*.json")):
    m = re.match(r"(.+)\.r(\d+)\.(\d+)\.json$", os.path.basename(path))
    if not m:
        continue
    try:
        res = json.loads(open(path).read().strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = None
    runs.setdefault(m.group(1), {}).setdefault(int(m.group(2)), {})[int(m.group(3))] = res


def fmt(values):
    if not values:
        return "n/a"
    if len(values) == 1:
        return "%.2f" % values[0]
    return "%.2f [%.2f-%.2f]" % (statistics.median(values), min(values), max(values))


def series(group, tenant, key):
    out = []
    for _, tenants in sorted(runs.get(group, {}).items()):
        res = tenants.get(tenant)
        if res and key in res:
            out.append(float(res[key]))
    return out


def combined(group):
    out = []
    for _, tenants in sorted(runs.get(group, {}).items()):
        rates = [t.get("rate") for t in tenants.values() if t and t.get("kind") == "train"]
        if len(rates) == 2:
            out.append(sum(rates))
    return out


print("%-12s %-8s %-22s %-22s" % ("group", "tenant", "rate (steps|req /s)", "p99 ms"))
for group in sorted(runs):
    for tenant in sorted({i for t in runs[group].values() for i in t}):
        kinds = {t[tenant]["kind"] for t in runs[group].values() if t.get(tenant)}
        print("%-12s %-8s %-22s %-22s" % (group, "/".join(sorted(kinds)) + "#%d" % tenant,
                                          fmt(series(group, tenant, "rate")),
                                          fmt(series(group, tenant, "p99_ms"))))
    if group.endswith("_pair"):
        print("%-12s %-8s %-22s" % (group, "sum", fmt(combined(group))))
missing = [p for p in glob.glob(os.path.join(raw, "*.json")) if os.path.getsize(p) == 0]
for p in missing:
    err = p[:-5] + ".err"
    tail = open(err).read().strip().splitlines()[-3:] if os.path.exists(err) else []
    print("NO RESULT %s: %s" % (os.path.basename(p), " | ".join(tail)))


def med(values):
    return statistics.median(values) if values else float("nan")


checks = []
mps_pair, vmps_pair, ts_pair = med(combined("mps_pair")), med(combined("vmps_pair")), med(combined("ts_pair"))
checks.append(("pair: vmps >= 95 % of plain MPS", vmps_pair >= 0.95 * mps_pair,
               "%.2f vs %.2f (%.1f %%)" % (vmps_pair, mps_pair, 100 * vmps_pair / mps_pair)))
checks.append(("pair: vmps >= 110 % of time-sliced 50+50", vmps_pair >= 1.10 * ts_pair,
               "%.2f vs %.2f (%.1f %%)" % (vmps_pair, ts_pair, 100 * vmps_pair / ts_pair)))
a, b = med(series("vmps_alone", 0, "rate")), med(series("mps_alone", 0, "rate"))
checks.append(("alone at 50: vmps within +-5 % of plain MPS", abs(a - b) <= 0.05 * b,
               "%.2f vs %.2f (%+.1f %%)" % (a, b, 100 * (a - b) / b)))
a, b = med(series("vmps_infer", 0, "p99_ms")), med(series("mps_infer", 0, "p99_ms"))
checks.append(("inference p99 beside training: vmps <= plain MPS", a <= b,
               "%.1f ms vs %.1f ms" % (a, b)))
for name, ok, detail in checks:
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
