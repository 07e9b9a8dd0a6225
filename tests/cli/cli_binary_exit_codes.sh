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

# `vgpu run --gpus` against the fake NVML (testing/fakes) with one GPU: a GPU that does not exist is
# an error naming it (125), for indices and UUIDs alike. Needs the fake driver and libvgpu.so,
# given by CTest in VGPU_TEST_FAKE_DIR and VGPU_TEST_LIBVGPU; skipped without them.
if [[ -n "${VGPU_TEST_FAKE_DIR:-}" && -n "${VGPU_TEST_LIBVGPU:-}" ]]; then
  state=$(mktemp -d)
  export LD_LIBRARY_PATH=$VGPU_TEST_FAKE_DIR VGPU_FAKE_STATE_DIR=$state VGPU_FAKE_GPUS=1
  export VGPU_LIBRARY=$VGPU_TEST_LIBVGPU
  uuid=GPU-00000000-0000-0000-0000-000000000000  # the fake's GPU 0 (docs/fake-driver.md)
  expect 0 "run --gpus 0 (present)" -- run --gpus 0 -- true
  expect 0 "run --gpus <uuid> (present)" -- run --gpus "$uuid" -- true
  expect 125 "run --gpus 5 (absent)" -- run --gpus 5 -- true
  want="vgpu run: --gpus 5: no such GPU (this node has 1: 0 $uuid)"
  [[ "$LAST_OUT" == "$want" ]] || { echo "FAIL: run --gpus 5 says: $LAST_OUT; want: $want"; fail=1; }
  expect 125 "run --gpus 0,1 (1 absent)" -- run --gpus 0,1 -- true
  [[ "$LAST_OUT" == "vgpu run: --gpus 1: no such GPU"* ]] || { echo "FAIL: run --gpus 0,1 says: $LAST_OUT"; fail=1; }
  expect 125 "run --gpus <uuid> (absent)" -- run --gpus GPU-deadbeef-0000-0000-0000-000000000000 -- true
  [[ "$LAST_OUT" == "vgpu run: --gpus GPU-deadbeef-0000-0000-0000-000000000000: no such GPU (this node has 1: 0 $uuid)" ]] ||
    { echo "FAIL: run --gpus <absent uuid> says: $LAST_OUT"; fail=1; }
  expect 2 "run --gpus with a bad entry" -- run --gpus x -- true
  rm -rf "$state"
else
  echo "skipping the vgpu run --gpus checks: no fake driver or libvgpu.so in this build"
fi
exit $fail
