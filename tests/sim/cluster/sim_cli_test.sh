#!/usr/bin/env bash
# `vgpu sim` as a user runs it: the built-in demo, --json, and bad input. Usage: $0 <vgpu binary>
set -uo pipefail
VGPU=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Built-in scenario: both policies side by side, invariants hold, exit 0.
"$VGPU" sim --no-progress >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/out" "$TMP/err"; fail "vgpu sim exited $rc"; }
for want in "binpack-vs-spread" "node=binpack,gpu=binpack" "node=spread,gpu=spread" "Summary:" \
            "PENDING" "GPUS IN USE"; do
  grep -qF -- "$want" "$TMP/out" || { cat "$TMP/out"; fail "output lacks '$want'"; }
done
grep -q "VIOLATED" "$TMP/out" && { cat "$TMP/out"; fail "invariants violated"; }

# JSON: one document, one run per policy, every pod accounted for.
"$VGPU" sim --json --node-policy spread --gpu-policy spread >"$TMP/json" || fail "--json run failed"
python3 - "$TMP/json" <<'PY' || fail "bad JSON output"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["runs"]) == 1, d["runs"]
r = d["runs"][0]
assert r["policy"] == {"node": "spread", "gpu": "spread"}, r["policy"]
p = r["pods"]
assert p["placed"] + p["pending"] + p["denied"] == p["total"] == 20, p
assert r["invariants"]["ok"], r["invariants"]
PY

# Topology: the shipped NVLink-pairs scenario under topology-aware puts its 2-GPU jobs (16 of its
# 20 multi-GPU pods) on NVLinked pairs; --topology gives every node of another scenario one.
SCENARIOS=$(dirname "$0")/../../../sim/scenarios
"$VGPU" sim --json --scenario "$SCENARIOS/nvlink-pairs.yaml" --gpu-policy topology-aware \
  >"$TMP/json" 2>"$TMP/err" || { cat "$TMP/err"; fail "topology-aware run failed"; }
python3 - "$TMP/json" <<'PY' || fail "bad topology JSON"
import json, sys
t = json.load(open(sys.argv[1]))["runs"][0]["topology"]
assert t["scored_nodes"] == 4 and t["multi_gpu_pods"] == 20, t
assert 12 <= t["all_nvlinked"] <= 16 and t["mean_pair_score"] > 300, t
PY
"$VGPU" sim --json --topology pcie >"$TMP/json" 2>"$TMP/err" || fail "--topology run failed"
python3 - "$TMP/json" <<'PY' || fail "bad --topology JSON"
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    assert r["topology"]["scored_nodes"] == 3, r["topology"]
    assert r["topology"]["all_nvlinked"] == 0, r["topology"]
PY

# Bad input: clear one-line errors, exit 2, nothing run.
printf 'nodes: [{name: a, gpus: [{model: m, memory: lots}]}]\n' >"$TMP/bad.yaml"
"$VGPU" sim --scenario "$TMP/bad.yaml" >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "bad scenario: exit $rc, want 2"
grep -q "cannot read 'lots'" "$TMP/err" || { cat "$TMP/err"; fail "bad scenario message"; }
"$VGPU" sim --node-policy tightest >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "unknown policy: exit $rc, want 2"
grep -qF -- "--node-policy: 'tightest' is not a node policy (binpack or spread)" "$TMP/err" || { cat "$TMP/err"; fail "policy message"; }
"$VGPU" sim --topology mesh >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "bad topology: exit $rc, want 2"
grep -q "topology: bad entry 'mesh'" "$TMP/err" || { cat "$TMP/err"; fail "topology message"; }
"$VGPU" sim --nodes 3 >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "--nodes without --pods: exit $rc, want 2"
echo "PASS"
