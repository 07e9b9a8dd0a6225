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

  # The region is private: a file 0600 in a 0700 directory made for the run, under $TMPDIR.
  # Before: a 0666 file in $TMPDIR that any local user could truncate (SIGBUS) or lock.
  expect 0 "run: region modes" -- run -- sh -c 'echo $(stat -c %a "$CUDA_DEVICE_MEMORY_SHARED_CACHE" "$(dirname "$CUDA_DEVICE_MEMORY_SHARED_CACHE")")'
  [[ "$LAST_OUT" == "600 700" ]] || { echo "FAIL: region file/dir modes: $LAST_OUT, want 600 700"; fail=1; }
  # --gpumem takes the units users type, as libvgpu reads them; inherited limits do not win.
  expect 0 "run --gpumem 3g" -- run --gpumem 3g -- sh -c 'echo "$CUDA_DEVICE_MEMORY_LIMIT"'
  [[ "$LAST_OUT" == "3072m" ]] || { echo "FAIL: --gpumem 3g sets: $LAST_OUT, want 3072m"; fail=1; }
  LAST_OUT=$(CUDA_DEVICE_MEMORY_LIMIT_0=100g CUDA_DEVICE_SM_LIMIT=90 "$vgpu" run --gpumem 1g -- \
    sh -c 'echo "${CUDA_DEVICE_MEMORY_LIMIT_0-unset} ${CUDA_DEVICE_SM_LIMIT-unset} $CUDA_DEVICE_MEMORY_LIMIT"' 2>&1)
  [[ "$LAST_OUT" == "unset unset 1024m" ]] || { echo "FAIL: inherited limits reach the command: $LAST_OUT"; fail=1; }
  # A --lib that is not libvgpu.so: exit 125, the command not run. Before: exit 0, run unlimited.
  marker=$state/ran
  expect 125 "run --lib /bin/ls" -- run --lib /bin/ls -- touch "$marker"
  [[ ! -e "$marker" ]] || { echo "FAIL: run --lib /bin/ls ran the command"; fail=1; }
  [[ "$LAST_OUT" == "vgpu run: --lib /bin/ls: "*"ls: not a loadable library: "*"the command was not run (it would have run without limits)" ]] ||
    { echo "FAIL: run --lib /bin/ls says: $LAST_OUT"; fail=1; }
  expect 125 "run --lib libcuda" -- run --lib "$VGPU_TEST_FAKE_DIR/libcuda.so.1" -- touch "$marker"
  [[ ! -e "$marker" && "$LAST_OUT" == *"does not define dlsym: not libvgpu.so"* ]] ||
    { echo "FAIL: run --lib libcuda says: $LAST_OUT"; fail=1; }
  # A --region that is a link: refused, never followed.
  ln -s /etc/passwd "$state/link.cache"
  expect 125 "run --region <symlink>" -- run --region "$state/link.cache" -- true
  [[ "$LAST_OUT" == *"is a symbolic link"* ]] || { echo "FAIL: run --region <symlink> says: $LAST_OUT"; fail=1; }
  rm -rf "$state"
else
  echo "skipping the vgpu run --gpus checks: no fake driver or libvgpu.so in this build"
fi
exit $fail
