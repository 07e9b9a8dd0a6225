# The system installed as an operator migrating from HAMi installs it: `helm install` of charts/vgpu
# with HAMi v2.10.0's complete values.yaml (tests/deploy/testdata/hami-v2.10.0-values.yaml, its image
# overrides removed as docs/install.md says), this cluster's values on top
# (tests/e2e/testdata/chart-values.yaml) and the run's own images, imported into every node's
# containerd (there is no registry). The API server validates every object the chart renders. The scenarios then run against the chart's pods; the
# hooks below replace what they would otherwise do to hand-started daemons.

E2E_RELEASE=vgpu
E2E_RELEASE_NS=kube-system
E2E_CHART_HAMI_VALUES=$E2E_REPO/tests/deploy/testdata/hami-v2.10.0-values.yaml
E2E_CHART_VALUES=$E2E_REPO/tests/e2e/testdata/chart-values.yaml
E2E_DEFAULT_SCHEDULER_HEALTH_PORT=${E2E_DEFAULT_SCHEDULER_HEALTH_PORT:-10261}
E2E_CHART_PROMETHEUS_PORT=${E2E_CHART_PROMETHEUS_PORT:-19091}
# "chart" once 12-chart-install ran: the scenarios' hooks then act on the chart's pods.
E2E_MODE=hand

cli_bin() { echo "${E2E_CLI_BIN:-$E2E_VGPU_BUILD/cli/vgpu}"; }

helm_bin() {
  local b
  for b in "${E2E_HELM:-}" /opt/vgpu-tools/bin/helm "$(command -v helm 2>/dev/null)"; do
    [[ -n $b && -x $b ]] && {
      echo "$b"
      return 0
    }
  done
  return 1
}
h() { "$(helm_bin)" --kubeconfig "$E2E_WORK/kubeconfig/admin.kubeconfig" -n "$E2E_RELEASE_NS" "$@"; }

# The chart's object names for release "vgpu" (<fullname> = the release name).
chart_scheduler() { echo "$E2E_RELEASE-scheduler"; }
chart_device_plugin() { echo "$E2E_RELEASE-device-plugin"; }
chart_monitor() { echo "$E2E_RELEASE-monitor"; }

# chart_pods <component label> [node]: names of the component's pods (not being deleted).
chart_pods() {
  k get pods -n "$E2E_RELEASE_NS" -l "app.kubernetes.io/component=$1" -o json |
    jq -r --arg node "${2:-}" '.items[] | select(.metadata.deletionTimestamp == null)
      | select($node == "" or .spec.nodeName == $node) | .metadata.name'
}
chart_pod_ip() { k get pod -n "$E2E_RELEASE_NS" "$1" -o jsonpath='{.status.podIP}'; }

# workload_ready <kind> <name>: every replica of the DaemonSet / Deployment updated and Ready.
workload_ready() {
  local j
  j=$(k get "$1" -n "$E2E_RELEASE_NS" "$2" -o json) || return 1
  if [[ $1 == daemonset ]]; then
    jq -e '.status.desiredNumberScheduled > 0 and .status.numberReady == .status.desiredNumberScheduled
      and .status.updatedNumberScheduled == .status.desiredNumberScheduled
      and .status.observedGeneration == .metadata.generation' <<<"$j" >/dev/null
  else
    jq -e '.spec.replicas > 0 and .status.readyReplicas == .spec.replicas
      and .status.updatedReplicas == .spec.replicas and (.status.replicas // 0) == .spec.replicas
      and .status.observedGeneration == .metadata.generation' <<<"$j" >/dev/null
  fi
}
chart_ready() {
  workload_ready deployment "$(chart_scheduler)" &&
    workload_ready daemonset "$(chart_device_plugin)" &&
    workload_ready daemonset "$(chart_monitor)"
}

# The vgpu-scheduler pod that holds vgpu's Lease (the one that binds); empty if none.
chart_leader_pod() {
  k get lease -n "$E2E_RELEASE_NS" "$(chart_scheduler)" -o jsonpath='{.spec.holderIdentity}' \
    2>/dev/null | sed 's/_.*//'
}
chart_leader_is_live() {
  local p
  p=$(chart_leader_pod)
  [[ -n $p ]] && chart_pods hami-scheduler | grep -qx "$p"
}
# The pod that holds kube-scheduler's Lease (<schedulerName>).
chart_kube_scheduler_leader_pod() {
  k get lease -n "$E2E_RELEASE_NS" "$E2E_SCHEDULER_NAME" -o jsonpath='{.spec.holderIdentity}' \
    2>/dev/null | sed 's/_.*//'
}

# Everything the chart's pods run: the run's binaries as images (scripts/build-images.sh), and a
# stand-in for registry.k8s.io/kube-scheduler:<cluster version> (busybox + this build's
# kube-scheduler), imported into every node.
chart_images() {
  local bin=$E2E_WORK/image-bin out=$E2E_WORK/chart-images
  mkdir -p "$bin" "$out"
  local f
  for f in "$(device_plugin_bin)" "$(scheduler_bin)" "$(monitor_bin)" "$(cli_bin)" "$(libvgpu_so)"; do
    [[ -x $f || -f $f ]] || die "the images need $f (not built)"
    ln -sf "$f" "$bin/$(basename "$f")"
  done
  # localhost/vgpu/...: the names tests/e2e/testdata/chart-values.yaml installs.
  "$E2E_REPO/scripts/build-images.sh" --binaries "$bin" --registry localhost "$out" \
    >"$E2E_LOGS/build-images.log" 2>&1 ||
    die "scripts/build-images.sh failed (see $E2E_LOGS/build-images.log)"
  build_oci_image "registry.k8s.io/kube-scheduler:$E2E_K8S_VERSION" "$out/kube-scheduler.tar" \
    '["/bin/kube-scheduler"]' "$E2E_K8S_BIN/kube-scheduler:/bin/kube-scheduler"
  local node img
  for node in $(k get nodes -o name | cut -d/ -f2); do
    for img in "$out"/*.tar; do
      ctr --address "$(node_sock "$node")" -n k8s.io images import "$img" >/dev/null ||
        die "ctr could not import $img into the containerd of $node"
    done
  done
  log "images: $(cd "$out" && for img in *.tar; do printf '%s %s MB; ' "${img%.tar}" \
    $(($(stat -c %s "$img") / 1048576)); done)"
}

# The fake GPUs' faults folder (vgpu.sh, E2E_FAULTS_HAND) as the device plugin pods see it: inside
# the hook folder they mount, which is each node's own folder (node_chart_hook_dir) on the host.
E2E_CHART_FAULTS=$E2E_CHART_HOOK/vgpu/fake-faults

# The run's values on top of the HAMi-style file: fake GPUs for the device plugin, the node's
# hook folder, no NVML for the monitor, kube-scheduler's preemption on (E2E_KUBE_PREEMPTION=1,
# the default: this cluster's kube-scheduler carries the backported fixes; the chart's auto keeps
# it off on 1.20), and gpumem/gpucores advertised as node extended resources for every chart
# scenario, so that kubelet's admission counts them under all of them (scenario 20 checks the
# figures). The device plugin's extraArgs replace HAMi's list, so HAMi's -v=4 is repeated there:
# every daemon of the release then starts with Go's spelling. JSON is YAML.
chart_run_values() {
  local extra=${1:-} preemption=auto
  [[ ${E2E_KUBE_PREEMPTION:-1} == 1 ]] && preemption=true
  jq -n --arg fake "count=$E2E_FAKE_GPUS,memory=$E2E_FAKE_GPU_MEMORY,model=NVIDIA A100-SXM4-16GB,faults=$E2E_CHART_FAULTS$extra" \
    --argjson split "$E2E_SPLIT_COUNT" --arg hook "$E2E_CHART_HOOK" --arg preemption "$preemption" \
    --arg recovery "--health-recovery-seconds=$E2E_HEALTH_RECOVERY_S" '
    {global: {gpuHookPath: $hook},
     scheduler: {kubeScheduler: {preemption: $preemption}},
     devicePlugin: {deviceSplitCount: $split, libPath: ($hook + "/vgpu"), advertiseExtendedResources: true,
                    extraArgs: ["--fake-gpus=" + $fake, $recovery, "-v=4"],
                    monitor: {ctrPath: ($hook + "/vgpu/containers"), nvmlLibrary: ""}}}'
}

# chart_release <install|upgrade> [helm flags...]: the release with the three values files; waits for
# every pod of it to be Ready. E2E_CHART_FAKE_EXTRA: more --fake-gpus fields (",topology=...").
chart_release() {
  local verb=$1
  shift
  chart_run_values "${E2E_CHART_FAKE_EXTRA:-}" >"$E2E_WORK/chart-run-values.yaml"
  h "$verb" "$E2E_RELEASE" "$E2E_REPO/charts/vgpu" -f "$E2E_CHART_HAMI_VALUES" -f "$E2E_CHART_VALUES" \
    -f "$E2E_WORK/chart-run-values.yaml" "$@" >"$E2E_LOGS/helm-$verb.log" 2>&1 ||
    fail "helm $verb failed: $(tail -n 5 "$E2E_LOGS/helm-$verb.log")"
  wait_until 180 "every pod of the release Ready" chart_ready || {
    chart_dump
    fail "the release's pods are not all Ready 180 s after helm $verb"
  }
  wait_until 60 "a live vgpu-scheduler pod leads" chart_leader_is_live ||
    fail "no live vgpu-scheduler pod holds the Lease $(chart_scheduler)"
}

chart_dump() {
  k get pods -n "$E2E_RELEASE_NS" -o wide >&2 || true
  local p
  for p in $(k get pods -n "$E2E_RELEASE_NS" -o name | cut -d/ -f2); do
    k get pod -n "$E2E_RELEASE_NS" "$p" -o json |
      jq -c '{pod: .metadata.name, node: .spec.nodeName, phase: .status.phase,
              containers: [.status.containerStatuses[]? | {name, ready, restartCount, state}]}' >&2
  done
  k get events -n "$E2E_RELEASE_NS" --sort-by=.lastTimestamp 2>/dev/null | tail -n 20 >&2 || true
}

# A kube-scheduler without our extender places the chart's own pods (profile default-scheduler).
start_default_scheduler() {
  start_daemon kube-scheduler-default "$E2E_K8S_BIN/kube-scheduler" \
    --kubeconfig "$E2E_WORK/kubeconfig/kube-scheduler.kubeconfig" --leader-elect=false \
    --port "$E2E_DEFAULT_SCHEDULER_HEALTH_PORT" --address 127.0.0.1 --secure-port 0 --v 1
  wait_until 30 "default kube-scheduler /healthz" \
    curl -sf "http://127.0.0.1:$E2E_DEFAULT_SCHEDULER_HEALTH_PORT/healthz" ||
    die "the default kube-scheduler did not start (log: $E2E_LOGS/kube-scheduler-default.log)"
}

# ---- 12: install -------------------------------------------------------------------------------
# The hand-started daemons stop (the chart brings its own), then helm install: every pod Running
# and Ready, libvgpu.so installed on every node, the webhook answering through its Service.
scenario_chart_install() {
  helm_bin >/dev/null || fail "no helm (scripts/install-deps.sh installs it in /opt/vgpu-tools/bin)"
  local d
  for d in prometheus vgpu-scheduler kube-scheduler; do stop_daemon "$d"; done
  for d in "$E2E_PIDS"/device-plugin-*.pid "$E2E_PIDS"/monitor-*.pid; do
    [[ -f $d ]] && stop_daemon "$(basename "$d" .pid)"
  done
  k delete mutatingwebhookconfiguration hami-webhook --ignore-not-found >/dev/null 2>&1 || true
  daemon_alive kube-scheduler-default || start_default_scheduler
  local t0=$SECONDS
  chart_images
  log "images built and imported in $((SECONDS - t0)) s"
  t0=$SECONDS
  chart_release install
  log "helm install: every pod Ready $((SECONDS - t0)) s after the command"
  local node
  for node in $(k get nodes -o name | cut -d/ -f2); do
    [[ -s $(node_chart_hook_dir "$node")/vgpu/ld.so.preload ]] ||
      fail "the device plugin pod of $node did not install libvgpu.so (no ld.so.preload in" \
        "$(node_chart_hook_dir "$node")/vgpu)"
  done
  # HAMi's enableNumaTopology: false (its default, in HAMi's values file) reached every device
  # plugin through device-config.yaml: no NUMA node goes to kubelet, as under HAMi.
  local logs
  for _ in $(seq 20); do
    logs=$(pod_log_files "${E2E_RELEASE_NS}_$(chart_device_plugin)-*")
    # shellcheck disable=SC2086 # one file name per word
    [[ -n $logs && $(grep -l 'msg="discovered GPUs"' $logs | wc -l) == "$(wc -w <<<"$logs")" ]] && break
    sleep 1
  done
  [[ -n $logs ]] || fail "no log of a device plugin pod"
  # shellcheck disable=SC2086
  [[ $(grep -l 'msg="discovered GPUs".*numa_topology=false' $logs | wc -l) == "$(wc -w <<<"$logs")" ]] ||
    fail "a device plugin pod did not start with numa_topology=false:" \
      "$(grep -h 'discovered GPUs' $logs)"
  [[ $(chart_pods hami-scheduler | wc -l) == 2 ]] || fail "expected 2 scheduler pods: $(chart_pods hami-scheduler)"
  [[ $(k get endpoints -n "$E2E_RELEASE_NS" "$(chart_scheduler)" -o json |
    jq '[.subsets[]?.addresses[]?] | length') == 2 ]] ||
    fail "the scheduler Service does not list both pods as endpoints"
}

chart_installed_or_fail() {
  [[ $E2E_MODE == chart ]] || fail "the chart is not installed (12-chart-install failed)"
}

# ---- hooks used by the scenarios (scenarios.sh) -------------------------------------------------
# restart_device_plugin <node>: the node's device plugin process is replaced.
restart_device_plugin() {
  local node=$1
  if [[ $E2E_MODE == hand ]]; then
    stop_daemon "device-plugin-$node"
    start_device_plugin "$node"
    return
  fi
  local old
  old=$(chart_pods hami-device-plugin "$node")
  k delete pod -n "$E2E_RELEASE_NS" "$old" --wait=true >/dev/null
  wait_until 90 "a new device plugin pod Ready on $node" device_plugin_replaced "$node" "$old" ||
    fail "no new device plugin pod Ready on $node after deleting $old"
}
device_plugin_replaced() {
  local p
  p=$(chart_pods hami-device-plugin "$1")
  [[ -n $p && $p != "$2" ]] &&
    [[ $(k get pod -n "$E2E_RELEASE_NS" "$p" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

# restart_scheduler: every vgpu-scheduler (and, in the chart, its kube-scheduler) starts afresh.
restart_scheduler() {
  if [[ $E2E_MODE == hand ]]; then
    stop_daemon vgpu-scheduler
    start_vgpu_scheduler
    return
  fi
  local old
  old=$(chart_pods hami-scheduler | paste -sd' ')
  # shellcheck disable=SC2086 # pod names
  k delete pod -n "$E2E_RELEASE_NS" $old --wait=true >/dev/null
  wait_until 120 "the scheduler Deployment Ready again" workload_ready deployment "$(chart_scheduler)" ||
    fail "the scheduler pods did not come back Ready after deleting $old"
  wait_until 60 "a new vgpu-scheduler pod leads" chart_leader_is_live ||
    fail "no live vgpu-scheduler pod holds the Lease after the restart"
}

# The leading scheduler's /metrics page.
scheduler_metrics_url() {
  if [[ $E2E_MODE == hand ]]; then
    echo "http://127.0.0.1:$E2E_SCHEDULER_METRICS_PORT/metrics"
  else
    echo "http://$(chart_pod_ip "$(chart_leader_pod)"):9395/metrics"
  fi
}

# set_fake_topology <node> <gpus> <topology or "">: the node's device plugin restarted with that
# many fake GPUs (and links). The chart's DaemonSet gives every node the same arguments: a helm
# upgrade changes them on all nodes (the scenario looks at one).
set_fake_topology() {
  local node=$1 gpus=$2 topo=$3
  if [[ $E2E_MODE == hand ]]; then
    stop_daemon "device-plugin-$node"
    E2E_FAKE_GPUS=$gpus E2E_FAKE_TOPOLOGY=$topo start_device_plugin "$node"
    return
  fi
  E2E_FAKE_GPUS=$gpus E2E_CHART_FAKE_EXTRA=${topo:+,topology=$topo} chart_release upgrade
}

# ---- 14: leader kill ------------------------------------------------------------------------------
# The scheduler pod whose vgpu-scheduler leads dies as a node failure would kill it: SIGKILL to its
# containers (no Lease given back), and the pod deleted. A GPU pod created at once must be bound
# by the other replica within 30 s, no GPU over-committed; the Deployment's replacement comes up.
scenario_chart_leader_kill() {
  chart_installed_or_fail
  local f=$E2E_WORK/chart-leader.jsonl leader ksleader node t0 waited
  wait_until 60 "both scheduler pods Ready, one leading" chart_scheduler_settled ||
    fail "the scheduler pods are not settled: $(chart_pods hami-scheduler | paste -sd' ')," \
      "leader '$(chart_leader_pod)'"
  pod_json cleader-1 cleader 1 4000 25 >"$f"
  E2E_T0_MS=$(now_ms)
  create_pods "$f"
  wait_bind_success cleader 1 60 "$E2E_TIMINGS/leader.ms"

  leader=$(chart_leader_pod)
  ksleader=$(chart_kube_scheduler_leader_pod)
  node=$(k get pod -n "$E2E_RELEASE_NS" "$leader" -o jsonpath='{.spec.nodeName}')
  log "killing scheduler pod $leader on $node (leads vgpu-scheduler; kube-scheduler's Lease: $ksleader)"
  local ids id
  ids=$(k get pod -n "$E2E_RELEASE_NS" "$leader" -o json |
    jq -r '.status.containerStatuses[].containerID | sub("^containerd://"; "")')
  t0=$SECONDS
  for id in $ids; do
    ctr --address "$(node_sock "$node")" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 ||
      fail "could not SIGKILL container $id of $leader"
  done
  k delete pod -n "$E2E_RELEASE_NS" "$leader" --grace-period=0 --force --wait=false >/dev/null 2>&1
  pod_json cleader-2 cleader 1 4000 25 >"$f"
  E2E_T0_MS=$(now_ms)
  # Until the endpoints controller drops the dead pod, the webhook (failurePolicy Fail) may be
  # called there; a client retries a refused create.
  wait_until 20 "cleader-2 admitted" create_pods "$f" || fail "cleader-2 was not admitted in 20 s"
  wait_bind_success cleader 2 $((30 - (SECONDS - t0))) "$E2E_TIMINGS/leader.ms"
  waited=$((SECONDS - t0))
  local usage
  usage=$(gpu_usage cleader)
  within_gpu_limits "$usage" || fail "a GPU is over-committed after the takeover: $usage"
  log "leader kill: $leader killed, cleader-2 bound by $(chart_leader_pod) ${waited} s after the kill"
  wait_until 120 "the scheduler Deployment Ready again" workload_ready deployment "$(chart_scheduler)" ||
    fail "the scheduler Deployment did not replace $leader"
  delete_pods cleader
}
chart_scheduler_settled() {
  workload_ready deployment "$(chart_scheduler)" && chart_leader_is_live &&
    [[ $(chart_leader_pod) == "$(chart_kube_scheduler_leader_pod)" ]]
}

# ---- 15: upgrade, uninstall -------------------------------------------------------------------------
# helm upgrade drops the webhook and changes the node policy: a new revision, the webhook object
# gone, the scheduler pods rolled out with the new flag and Ready. helm uninstall: every object of
# the release, its pods and its records gone.
scenario_chart_upgrade_uninstall() {
  chart_installed_or_fail
  local m=$E2E_WORK/helm
  mkdir -p "$m"
  h get manifest "$E2E_RELEASE" >"$m/manifest.yaml" || fail "helm get manifest failed"
  local kinds
  kinds=$(grep -c '^kind:' "$m/manifest.yaml")
  chart_release upgrade --set scheduler.admissionWebhook.enabled=false \
    --set scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy=spread
  ! h get manifest "$E2E_RELEASE" | grep -q '^kind: MutatingWebhookConfiguration' ||
    fail "the upgrade with admissionWebhook.enabled=false kept the webhook in the release"
  [[ -z $(k get mutatingwebhookconfiguration -o name) ]] ||
    fail "helm upgrade left a MutatingWebhookConfiguration: $(k get mutatingwebhookconfiguration -o name)"
  [[ $(h history "$E2E_RELEASE" -o json | jq length) -ge 2 ]] || fail "helm history shows no new revision"
  local p
  for p in $(chart_pods hami-scheduler); do
    k get pod -n "$E2E_RELEASE_NS" "$p" -o json |
      jq -e '[.spec.containers[] | select(.name == "vgpu-scheduler") | .command[]]
        | index("--node-scheduler-policy=spread")' >/dev/null ||
      fail "scheduler pod $p does not run with --node-scheduler-policy=spread after the upgrade"
  done
  log "helm upgrade: webhook dropped, policy spread, $(chart_pods hami-scheduler | wc -l) scheduler pods Ready"

  h uninstall "$E2E_RELEASE" >"$E2E_LOGS/helm-uninstall.log" 2>&1 ||
    fail "helm uninstall failed: $(tail -n 5 "$E2E_LOGS/helm-uninstall.log")"
  wait_until 120 "the release's objects and pods gone" release_gone "$m/manifest.yaml" ||
    fail "helm uninstall left: $(k get -f "$m/manifest.yaml" -o name --ignore-not-found 2>/dev/null)" \
      "$(k get pods -n "$E2E_RELEASE_NS" -l app.kubernetes.io/instance="$E2E_RELEASE" -o name)"
  local left
  left=$(k get secrets -n "$E2E_RELEASE_NS" -o name | grep "sh.helm.release.v1.$E2E_RELEASE\." || true)
  [[ -z $left ]] || fail "helm uninstall left its release records: $left"
  log "helm uninstall: $kinds objects, every pod and the release records gone"
}
release_gone() {
  [[ -z $(k get -f "$1" -o name --ignore-not-found 2>/dev/null) ]] &&
    [[ -z $(k get pods -n "$E2E_RELEASE_NS" -l app.kubernetes.io/instance="$E2E_RELEASE" -o name) ]]
}
