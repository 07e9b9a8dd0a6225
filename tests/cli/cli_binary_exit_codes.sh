#!/usr/bin/env bash
# Checks the exit codes and output shape of the vgpu binary.
set -u
vgpu=$1
fail=0
expect() {  # expect <code> <description> -- args...
  local want=$1 what=$2; shift 3
  local out rc
  out=$("$vgpu" "$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL: $what: exit $rc, want $want; output: $out"; fail=1; fi
  LAST_OUT=$out
}
expect 0 "help" -- --help
[[ "$LAST_OUT" == *version* ]] || { echo "FAIL: help does not list 'version'"; fail=1; }
expect 0 "version" -- version
[[ "$LAST_OUT" == *"git commit"* && "$LAST_OUT" == *"CUDA headers"* ]] || { echo "FAIL: version output: $LAST_OUT"; fail=1; }
expect 2 "unknown subcommand" -- frobnicate
[[ $(printf '%s\n' "$LAST_OUT" | wc -l) -eq 1 ]] || { echo "FAIL: unknown subcommand error is not one line: $LAST_OUT"; fail=1; }
expect 2 "bad flag" -- --no-such-flag
[[ $(printf '%s\n' "$LAST_OUT" | wc -l) -eq 1 ]] || { echo "FAIL: bad flag error is not one line: $LAST_OUT"; fail=1; }
exit $fail
