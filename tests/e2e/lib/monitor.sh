# The node monitor (vgpu-monitor, one per node, as the DaemonSet runs it) and a real Prometheus
# (Debian package) scraping the scheduler and every monitor; scenario 8 checks what a user would
# query, with pods whose process really runs libvgpu.so against the fake driver.

E2E_MONITOR_PORT_BASE=${E2E_MONITOR_PORT_BASE:-19400}
E2E_PROMETHEUS_PORT=${E2E_PROMETHEUS_PORT:-19090}

monitor_bin() { echo "${E2E_MONITOR_BIN:-$E2E_VGPU_BUILD/monitor/vgpu-monitor}"; }
have_monitor() { [[ -x $(monitor_bin) ]]; }
monitor_port() { echo $((E2E_MONITOR_PORT_BASE + $1)); }
# What pods of scenario 8 run: the probe and the fake driver from this build.
fake_lib_dir() { echo "${E2E_FAKE_LIB_DIR:-$E2E_VGPU_BUILD/testing/fakes/lib}"; }
probe_bin() { echo "${E2E_PROBE_BIN:-$E2E_VGPU_BUILD/tests/libvgpu/support/libvgpu_probe}"; }
libvgpu_so() { echo "${E2E_LIBVGPU:-$E2E_VGPU_BUILD/lib/libvgpu.so}"; }
# The fake GPUs' shared state of a node: the monitor (NVML) and the node's pods see one GPU set.
fake_state_dir() { echo "$E2E_WORK/nodes/$1/fake-gpu"; }

start_monitor() {
  local node=$1 i=$2
  mkdir -p "$(fake_state_dir "$node")" "$E2E_WORK/nodes/$node/hook/vgpu/containers"
  start_daemon "monitor-$node" env LD_LIBRARY_PATH="$(fake_lib_dir)" \
    VGPU_FAKE_GPUS="$E2E_FAKE_GPUS" VGPU_FAKE_STATE_DIR="$(fake_state_dir "$node")" \
    "$(monitor_bin)" \
    --kubeconfig "$E2E_WORK/kubeconfig/hami-device-plugin.kubeconfig" \
    --node-name "$node" --vgpu-dir "$E2E_WORK/nodes/$node/hook/vgpu" \
    --metrics-bind "127.0.0.1:$(monitor_port "$i")" --tick 500 \
    --nvml-library "$(fake_lib_dir)/libnvidia-ml.so.1"
  wait_until 30 "vgpu-monitor of $node /healthz" \
    curl -sf "http://127.0.0.1:$(monitor_port "$i")/healthz" ||
    die "vgpu-monitor of $node did not answer (log: $E2E_LOGS/monitor-$node.log)"
}

# start_prometheus [name port scheduler-target monitor-targets]: by default the hand-started
# scheduler and monitors; the chart's scenario 8 gives its pods' addresses.
start_prometheus() {
  local name=${1:-prometheus} port=${2:-$E2E_PROMETHEUS_PORT}
  local sched=${3:-"'127.0.0.1:$E2E_SCHEDULER_METRICS_PORT'"} targets=${4:-} i
  local dir=$E2E_WORK/$name
  mkdir -p "$dir/data"
  if [[ -z $targets ]]; then
    for i in $(seq 1 "${E2E_NODES:-2}"); do
      targets+="${targets:+, }'127.0.0.1:$(monitor_port "$i")'"
    done
  fi
  cat >"$dir/prometheus.yml" <<EOT
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vgpu-scheduler
    static_configs: [{targets: [$sched]}]
  - job_name: vgpu-monitor
    static_configs: [{targets: [$targets]}]
EOT
  start_daemon "$name" prometheus --config.file "$dir/prometheus.yml" \
    --storage.tsdb.path "$dir/data" --web.listen-address "127.0.0.1:$port"
  wait_until 30 "$name ready" curl -sf "http://127.0.0.1:$port/-/ready" ||
    die "$name did not start (log: $E2E_LOGS/$name.log)"
  E2E_PROMETHEUS_ACTIVE_PORT=$port
}

# prom_query <PromQL>: the instant vector's samples as JSON [{metric, value}].
prom_query() {
  curl -sf -G "http://127.0.0.1:${E2E_PROMETHEUS_ACTIVE_PORT:-$E2E_PROMETHEUS_PORT}/api/v1/query" \
    --data-urlencode "query=$1" |
    jq -c '[.data.result[] | {metric, value: (.value[1] | tonumber)}]'
}

# prom_value_is <PromQL> <value>: exactly one sample, with this value.
prom_value_is() {
  local got
  got=$(prom_query "$1") || return 1
  [[ $(jq 'length' <<<"$got") == 1 && $(jq '.[0].value' <<<"$got") == "$2" ]]
}

targets_up() {
  [[ $(prom_query 'sum(up)' | jq '.[0].value // 0') == $((1 + ${E2E_NODES:-2})) ]]
}

# A pod whose process runs libvgpu.so (preloaded through Allocate's /etc/ld.so.preload mount)
# against the fake driver and holds a context and 2 MiB until the pod is deleted. The busybox
# image has no C library: the host's, the probe and the fake driver are mounted read-only. Without
# the NVIDIA container toolkit nothing narrows a container's GPUs to the one the plugin gave it:
# the pod sees one fake GPU, the node's first, and asks the scheduler for that GPU by UUID so that
# the two views agree.
monitor_pod_json() {
  local name=$1 node=$2 mem=$3 cores=$4
  jq -n --arg name "$name" --arg node "$node" --arg mem "$mem" --arg cores "$cores" \
    --arg image "$E2E_BUSYBOX_IMAGE" --arg probe "$(probe_bin)" --arg probedir "$(dirname "$(probe_bin)")" \
    --arg fakes "$(fake_lib_dir)" --arg state "$(fake_state_dir "$node")" '
    def host($n; $p): {name: $n, hostPath: {path: $p}};
    def at($n; $p): {name: $n, mountPath: $p, readOnly: true};
    {apiVersion: "v1", kind: "Pod",
     metadata: {name: $name, labels: {"vgpu-e2e": "monitor"},
                annotations: {"nvidia.com/use-gpuuuid": ("GPU-fake-" + $node + "-0")}},
     spec: {terminationGracePeriodSeconds: 0,
            nodeSelector: {"kubernetes.io/hostname": $node},
            volumes: [host("libs"; "/usr/lib/x86_64-linux-gnu"), host("lib64"; "/lib64"),
                      host("probe"; $probedir), host("fakes"; $fakes),
                      {name: "gpu", hostPath: {path: $state}}],
            containers: [{name: "main", image: $image, imagePullPolicy: "Never",
              command: ["/bin/sh", "-c", ("sleep 100000 | " + $probe + " hold")],
              env: [{name: "LD_LIBRARY_PATH", value: $fakes},
                    {name: "VGPU_FAKE_GPUS", value: "1"},
                    {name: "VGPU_FAKE_STATE_DIR", value: $state}],
              volumeMounts: [at("libs"; "/usr/lib/x86_64-linux-gnu"),
                             at("libs"; "/lib/x86_64-linux-gnu"), at("lib64"; "/lib64"),
                             at("probe"; $probedir), at("fakes"; $fakes),
                             {name: "gpu", mountPath: $state}],
              resources: {limits: {"nvidia.com/gpu": "1", "nvidia.com/gpumem": $mem,
                                   "nvidia.com/gpucores": $cores}}}]}}'
}

# monitor_address <node index>: the node's monitor, hand-started or the chart's pod.
monitor_address() {
  if [[ $E2E_MODE == hand ]]; then
    echo "127.0.0.1:$(monitor_port "$1")"
  else
    echo "$(chart_pod_ip "$(chart_pods vgpu-monitor "e2e-node-$1")"):9394"
  fi
}
# monitor_snapshot <node index>
monitor_snapshot() { curl -sf "http://$(monitor_address "$1")/api/v1/snapshot"; }

# The container of a pod in a node's snapshot, as {sharing, limit, procs, host_pids}.
container_view() {
  monitor_snapshot "$1" | jq -c --arg pod "$2" '[.gpus[].containers[] | select(.pod == $pod) |
    {sharing, limit: .memory_limit_bytes, used: .memory_used_bytes,
     procs: (.processes | length), host_pids: [.processes[].host_pid]}] | first // empty'
}

container_sharing_is() { [[ $(container_view "$1" "$2" | jq -r '.sharing // ""') == "$3" ]]; }
container_listed() { [[ -n $(container_view "$1" "$2") ]]; }

# ---- 8: node monitor, Prometheus, policy default's sharing flag ------------------------------
scenario_monitor() {
  have_monitor || {
    fail "vgpu-monitor is not built ($(monitor_bin))"
    return
  }
  local node=$E2E_NODE1 idx=1 f=$E2E_WORK/monitor.jsonl
  if [[ $E2E_MODE == chart ]]; then
    # A Prometheus of its own scrapes the chart's pods: the leading scheduler and every monitor.
    local targets="" i
    for i in $(seq 1 "${E2E_NODES:-2}"); do targets+="${targets:+, }'$(monitor_address "$i")'"; done
    stop_daemon prometheus-chart
    rm -rf "$E2E_WORK/prometheus-chart"
    start_prometheus prometheus-chart "$E2E_CHART_PROMETHEUS_PORT" \
      "'$(chart_pod_ip "$(chart_leader_pod)"):9395'" "$targets"
  fi
  wait_until 30 "Prometheus scrapes the scheduler and every monitor" targets_up ||
    fail "Prometheus targets not all up: $(prom_query up)"
  monitor_pod_json mon-a "$node" 3000 30 >"$f"
  create_pods "$f"
  wait_until 60 "mon-a Running" pod_phase_is mon-a Running ||
    fail "mon-a did not run: $(k get pod mon-a -o json | jq -c '[.status.containerStatuses[]?.state]')"
  wait_until 20 "monitor lists mon-a" container_listed "$idx" mon-a ||
    fail "monitor of $node does not list mon-a: $(monitor_snapshot "$idx")"
  local view
  view=$(container_view "$idx" mon-a)
  log "monitor sees mon-a: $view"
  [[ $(jq '.limit' <<<"$view") == $((3000 * 1048576)) ]] || fail "mon-a's limit in the snapshot: $view"
  jq -e '.procs == 1 and .host_pids[0] > 0' <<<"$view" >/dev/null ||
    fail "mon-a's process has no host PID matched: $view"
  wait_until 20 "mon-a alone" container_sharing_is "$idx" mon-a alone ||
    fail "mon-a, alone on its GPU, is not marked alone: $(container_view "$idx" mon-a)"
  # What a user asks Prometheus: the container's limit (monitor) and its allocation (scheduler).
  wait_until 20 "Prometheus has mon-a's limit" prom_value_is \
    'hami_vgpu_memory_limit_bytes{pod="mon-a",namespace="default",container="main",zone="vGPU"}' \
    $((3000 * 1048576)) ||
    fail "hami_vgpu_memory_limit_bytes of mon-a: $(prom_query 'hami_vgpu_memory_limit_bytes')"
  wait_until 20 "Prometheus has mon-a's allocation" prom_value_is \
    'hami_vgpu_memory_allocated_bytes{pod="mon-a",namespace="default"}' $((3000 * 1048576)) ||
    fail "hami_vgpu_memory_allocated_bytes of mon-a: $(prom_query 'hami_vgpu_memory_allocated_bytes')"
  # The chart's monitor pods have no NVML here (no GPU driver in their image): no host series.
  if [[ $E2E_MODE == hand ]]; then
    prom_value_is 'count(hami_host_gpu_memory_used_bytes{node="'"$node"'"})' "$E2E_FAKE_GPUS" ||
      fail "host GPU series of $node: $(prom_query 'hami_host_gpu_memory_used_bytes')"
  fi
  # A second container on the same GPU: both come under their limits (flag "shared").
  monitor_pod_json mon-b "$node" 3000 30 >"$f"
  create_pods "$f"
  wait_until 60 "mon-b Running" pod_phase_is mon-b Running || fail "mon-b did not run"
  wait_until 20 "mon-a shared" container_sharing_is "$idx" mon-a shared ||
    fail "mon-a not marked shared beside mon-b: $(monitor_snapshot "$idx")"
  wait_until 20 "mon-b shared" container_sharing_is "$idx" mon-b shared ||
    fail "mon-b not marked shared beside mon-a: $(monitor_snapshot "$idx")"
  delete_pods monitor
}
