#!/usr/bin/env bash
# Diagnostic: how the native launch-bound loop's speed drifts on this host and what it follows
# (bench/gpu/host_drift.py). No libvgpu involved. DRIFT_S seconds per configuration (default 40).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${OUT:-$(mktemp -d)}
S=${DRIFT_S:-40}
PY="python3 $ROOT/bench/gpu/host_drift.py"
nproc; grep -m1 "model name" /proc/cpuinfo; head -1 /proc/stat
taskset -c 8 $PY sample "$W/samples.jsonl" &
SAMPLER=$!
trap 'kill $SAMPLER 2>/dev/null' EXIT
sleep 1
run() {  # run NAME CORE-LIST-OR-any MODE
  local name=$1 cores=$2 mode=$3 pin=()
  [ "$cores" != any ] && pin=(taskset -c "$cores")
  "${pin[@]}" $PY "$mode" "$S" "$W/$name.jsonl"
  echo "== $name ($mode, cores $cores)"
  $PY report "$W/$name.jsonl" "$W/samples.jsonl" "${cores%%[,-]*}"
}
run gpu_pin2 2 loop
run cpu_pin2 2 cpuloop
run gpu_any any loop
run gpu_pin2_again 2 loop
run gpu_pin2_3 2-3 loop
