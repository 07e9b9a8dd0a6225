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

# Bad input: clear one-line errors, exit 2, nothing run.
printf 'nodes: [{name: a, gpus: [{model: m, memory: lots}]}]\n' >"$TMP/bad.yaml"
"$VGPU" sim --scenario "$TMP/bad.yaml" >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "bad scenario: exit $rc, want 2"
grep -q "cannot read 'lots'" "$TMP/err" || { cat "$TMP/err"; fail "bad scenario message"; }
"$VGPU" sim --node-policy tightest >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "unknown policy: exit $rc, want 2"
grep -q "unknown node policy 'tightest'" "$TMP/err" || { cat "$TMP/err"; fail "policy message"; }
"$VGPU" sim --nodes 3 >"$TMP/out" 2>"$TMP/err"; rc=$?
[[ $rc -eq 2 ]] || fail "--nodes without --pods: exit $rc, want 2"
echo "PASS"
