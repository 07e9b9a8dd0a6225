# Builds and starts our own binaries: vgpu-scheduler (extender + webhook) and vgpu-device-plugin.

E2E_VGPU_BUILD=${E2E_VGPU_BUILD:-$E2E_REPO/build/e2e}
E2E_FAKE_GPUS=${E2E_FAKE_GPUS:-2}
E2E_FAKE_GPU_MEMORY=${E2E_FAKE_GPU_MEMORY:-16384}
E2E_SPLIT_COUNT=${E2E_SPLIT_COUNT:-16}

# Scenario 18 breaks a fake GPU by creating a file named after it in the device plugin's faults
# folder (--fake-gpus faults=); the plugin reports it unhealthy at its next probe (5 s) and
# healthy again once the file is gone and E2E_HEALTH_RECOVERY_S more seconds passed quietly.
E2E_FAULTS_HAND=${E2E_FAULTS_HAND:-$E2E_WORK/fake-faults}
E2E_HEALTH_RECOVERY_S=${E2E_HEALTH_RECOVERY_S:-2}

# Locations of the binaries once built; E2E_SCHEDULER_BIN / E2E_DEVICE_PLUGIN_BIN override.
scheduler_bin() { echo "${E2E_SCHEDULER_BIN:-$E2E_VGPU_BUILD/scheduler/vgpu-scheduler}"; }
device_plugin_bin() { echo "${E2E_DEVICE_PLUGIN_BIN:-$E2E_VGPU_BUILD/deviceplugin/vgpu-device-plugin}"; }

# Release build (no sanitizers: the binaries are long-running daemons here, and speed matters
# more than in unit tests) of just the two daemons, in a build folder of our own.
build_vgpu() {
  if [[ -n ${E2E_SCHEDULER_BIN:-} && -n ${E2E_DEVICE_PLUGIN_BIN:-} && -n ${E2E_MONITOR_BIN:-} &&
    -n ${E2E_CLI_BIN:-} ]]; then
    return 0
  fi
  # Subfolders of core/ are selected by their own names; `fakes` and `libvgpu` bring the fake
  # driver, libvgpu.so and the probe the node monitor's scenario runs in its pods.
  local components="core;net;kube;deviceplugin;scheduler;monitor;fakes;libvgpu;sim;cli" d
  for d in "$E2E_REPO"/core/*/; do components+=";$(basename "$d")"; done
  log "building the daemons, libvgpu.so, the fake driver and the probe in $E2E_VGPU_BUILD"
  # -O2 as in the release preset: GCC 12 at CMake's default -O3 reports a false -Wrestrict.
  cmake -S "$E2E_REPO" -B "$E2E_VGPU_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DVGPU_COMPONENTS="$components" >"$E2E_LOGS/vgpu-build.log" 2>&1 ||
    die "cmake configure failed (see $E2E_LOGS/vgpu-build.log)"
  # -k 0: one daemon that does not build yet must not hide whether the other one does.
  cmake --build "$E2E_VGPU_BUILD" -j"${E2E_JOBS:-2}" --target vgpu-scheduler vgpu-device-plugin \
    vgpu-monitor vgpu vgpu_preload vgpu_fake_cuda vgpu_fake_nvml libvgpu_probe \
    -- -k 0 >>"$E2E_LOGS/vgpu-build.log" 2>&1 || {
    grep -E 'error|FAILED' "$E2E_LOGS/vgpu-build.log" | head -n 20 >&2
    log "building the daemons, libvgpu.so or the fake driver failed (see $E2E_LOGS/vgpu-build.log)"
  }
  [[ -x $(device_plugin_bin) ]] || die "no vgpu-device-plugin binary at $(device_plugin_bin)"
}

# Scenarios that need the extender and the webhook fail (they do not skip) without it.
have_scheduler() { [[ -x $(scheduler_bin) ]]; }

extender_ready() { curl -sf "http://127.0.0.1:${1:-$E2E_EXTENDER_PORT}/readyz"; }

# start_vgpu_scheduler [name extender-port webhook-port metrics-port [flag...]]: the suite's one
# scheduler by default; scenario 11's replicas give their own name, ports and flags. A standby
# replica is ready too (only bind needs the leader).
start_vgpu_scheduler() {
  local name=${1:-vgpu-scheduler} ext=${2:-$E2E_EXTENDER_PORT} web=${3:-$E2E_WEBHOOK_PORT}
  local met=${4:-$E2E_SCHEDULER_METRICS_PORT}
  shift $(($# < 4 ? $# : 4))
  start_daemon "$name" "$(scheduler_bin)" \
    --kubeconfig "$E2E_WORK/kubeconfig/hami-scheduler.kubeconfig" \
    --http-bind "127.0.0.1:$ext" \
    --https-bind "127.0.0.1:$web" \
    --tls-cert "$E2E_CERTS/webhook.crt" --tls-key "$E2E_CERTS/webhook.key" \
    --scheduler-name "$E2E_SCHEDULER_NAME" \
    --webhook-system-accounts "${E2E_SCHEDULER_USER#system:serviceaccount:},${E2E_DEVICE_PLUGIN_USER#system:serviceaccount:}" \
    --metrics-bind "127.0.0.1:$met" "$@" \
    ${E2E_SCHEDULER_ARGS:-} # word-split on purpose: extra flags
  wait_until 30 "$name /readyz" extender_ready "$ext" ||
    die "$name did not answer on 127.0.0.1:$ext (log: $E2E_LOGS/$name.log)"
}

# Allocate mounts <hook>/vgpu/libvgpu.so.<version> into every container, so the file must exist.
# Most test pods run busybox-static, which has no dynamic loader and never loads it; the monitor's
# scenario runs a dynamically linked probe that does. Without a built libvgpu.so an empty
# placeholder stands in (and that scenario fails).
hook_placeholder() {
  if [[ -s $(libvgpu_so) ]]; then
    libvgpu_so
    return
  fi
  mkdir -p "$E2E_WORK/hook-src"
  : >"$E2E_WORK/hook-src/libvgpu.so"
  echo "$E2E_WORK/hook-src/libvgpu.so"
}

start_device_plugin() {
  local node=$1
  start_daemon "device-plugin-$node" "$(device_plugin_bin)" \
    --kubeconfig "$E2E_WORK/kubeconfig/hami-device-plugin.kubeconfig" \
    --node-name "$node" \
    --fake-gpus "count=$E2E_FAKE_GPUS,memory=$E2E_FAKE_GPU_MEMORY,model=NVIDIA A100-SXM4-16GB,faults=$E2E_FAULTS_HAND${E2E_FAKE_TOPOLOGY:+,topology=$E2E_FAKE_TOPOLOGY}" \
    --health-recovery-seconds "$E2E_HEALTH_RECOVERY_S" \
    --device-split-count "$E2E_SPLIT_COUNT" \
    --device-plugin-path "$(node_device_plugin_dir "$node")/" \
    --pod-resources-socket "$(node_pod_resources_dir "$node")/kubelet.sock" \
    --hook-path "$E2E_WORK/nodes/$node/hook" --libvgpu "$(hook_placeholder)" \
    --lock-dir "$E2E_WORK/nodes/$node/vgpulock" \
    ${E2E_DEVICE_PLUGIN_ARGS:-} # word-split on purpose: extra flags
}
