#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan, -DVGPU_FUZZ=ON) in BUILD_DIR,
# configuring only what they need, then runs every target for SECONDS from its seeds
# (fuzz/corpus/<target>) with its dictionary (BUILD_DIR/fuzz/fuzz_<target>.dict, joined from
# fuzz/dict/), two at a time. Fails on any crash, sanitizer report or failed check, printing the
# report and where the input that caused it was saved.
# Usage: fuzz_smoke.sh SOURCE_DIR BUILD_DIR [SECONDS]   (exit 77: skipped, no clang)
# FUZZ_MAX_LEN=N: inputs up to N bytes (libFuzzer's default grows them slowly from the seeds'); the
# campaign of docs/reliability.md: FUZZ_MAX_LEN=16384 fuzz_smoke.sh . build/dev/fuzz-smoke 600
set -euo pipefail
src=$1
build=$2
seconds=${3:-15}
jobs=2

if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "fuzz_smoke: skipped: no clang/clang++ (scripts/install-deps.sh installs them)"
  exit 77
fi

start=$(date +%s)
# Configured every time (seconds once the cache exists): a component added here reaches a build
# folder configured before.
components="core;base;codec;config;sched;prom;monitor;kube;net;scheduler;fuzz"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
    -DVGPU_SANITIZERS=address,undefined -DVGPU_FUZZ=ON \
    -DVGPU_COMPONENTS="$components" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
else
  cmake -S "$src" -B "$build" -DVGPU_COMPONENTS="$components" >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" -j"$jobs" --target fuzz_all >"$build.build.log" 2>&1 ||
  { tail -n 50 "$build.build.log"; exit 1; }
built=$(date +%s)
echo "fuzz_smoke: built the targets in $((built - start)) s"

out=$build/smoke
rm -rf "$out"
mkdir -p "$out"
run_one() {  # run_one TARGET: fuzz it for $seconds from a scratch copy of its corpus
  local t=$1
  local dict=()
  [[ -s "$build/fuzz/fuzz_$t.dict" ]] && dict=(-dict="$build/fuzz/fuzz_$t.dict")
  [[ -n "${FUZZ_MAX_LEN:-}" ]] && dict+=(-max_len="$FUZZ_MAX_LEN")
  mkdir -p "$out/$t.corpus"
  if "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${dict[@]}" \
      -artifact_prefix="$out/$t-" "$out/$t.corpus" "$src/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
    echo "fuzz_smoke: $t: $(grep -E '^Done [0-9]+ runs' "$out/$t.log" || echo '?')" \
      "($(grep -oE 'Dictionary: [0-9]+ entries' "$out/$t.log" || echo 'no dictionary');" \
      "$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$out/$t.log" | tail -n 1))"
  else
    echo "fuzz_smoke: $t: FAILED; input saved as $(ls "$out/$t-"* 2>/dev/null || echo '?')"
    grep -E -A25 'ERROR|runtime error|fuzz check failed|deadly signal' "$out/$t.log" | head -n 60
    return 1
  fi
}
export -f run_one
export out build src seconds FUZZ_MAX_LEN
targets=$(cd "$build/fuzz" && ls fuzz_* | sed 's/^fuzz_//' | grep -v '\.')
[[ -n "$targets" ]] || { echo "fuzz_smoke: no targets built"; exit 1; }
rc=0
printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'run_one {}' || rc=1
echo "fuzz_smoke: ran $(echo $targets | wc -w) targets ${seconds} s each in $(($(date +%s) - built)) s"
exit $rc
