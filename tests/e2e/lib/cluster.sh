# Starts the control plane (etcd, kube-apiserver, kube-scheduler with our extender) and fake-GPU
# nodes (containerd + kubelet + our device plugin), all on loopback.

E2E_SCHEDULER_NAME=hami-scheduler

start_etcd() {
  mkdir -p "$E2E_WORK/etcd"
  start_daemon etcd etcd --name e2e --data-dir "$E2E_WORK/etcd" \
    --listen-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$E2E_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((E2E_ETCD_PORT + 10))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((E2E_ETCD_PORT + 10))" \
    --initial-cluster "e2e=http://127.0.0.1:$((E2E_ETCD_PORT + 10))" \
    --listen-metrics-urls "http://127.0.0.1:$((E2E_ETCD_PORT + 20))"
  wait_until 30 "etcd health" curl -sf "http://127.0.0.1:$E2E_ETCD_PORT/health" ||
    die "etcd did not become healthy (log: $E2E_LOGS/etcd.log)"
}

apiserver_ready() {
  curl -sf --cacert "$E2E_CERTS/ca.crt" --cert "$E2E_CERTS/admin.crt" --key "$E2E_CERTS/admin.key" \
    "$E2E_SERVER/readyz"
}

start_apiserver() {
  # Pods reach the API server as in a cluster, at the `kubernetes` Service (10.96.0.1:443, what
  # kubelet puts in KUBERNETES_SERVICE_HOST/PORT). No kube-proxy runs here: the address is put on
  # the host's loopback device (pods route to the host through their node's bridge) and the API
  # server listens on every address at port 443 (E2E_APISERVER_PORT). ServiceAccount admission is
  # on: kube-controller-manager creates the accounts and their tokens, which the chart's pods use.
  # --enable-aggregator-routing: the API server calls webhooks at their Service's endpoints (pod
  # IPs, reachable from the host) instead of at the Service's cluster IP.
  ensure_service_ip
  start_daemon kube-apiserver "$E2E_K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$E2E_ETCD_PORT" \
    --bind-address 0.0.0.0 --advertise-address 127.0.0.1 \
    --secure-port "$E2E_APISERVER_PORT" --insecure-port 0 \
    --service-cluster-ip-range "$E2E_SERVICE_CIDR" \
    --client-ca-file "$E2E_CERTS/ca.crt" \
    --tls-cert-file "$E2E_CERTS/apiserver.crt" --tls-private-key-file "$E2E_CERTS/apiserver.key" \
    --kubelet-client-certificate "$E2E_CERTS/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$E2E_CERTS/apiserver-kubelet-client.key" \
    --token-auth-file "$E2E_CERTS/tokens.csv" \
    --service-account-key-file "$E2E_CERTS/sa.pub" \
    --service-account-signing-key-file "$E2E_CERTS/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction,MutatingAdmissionWebhook,ServiceAccount \
    --enable-aggregator-routing \
    --allow-privileged=true \
    --v 1
  wait_until 90 "kube-apiserver /readyz" apiserver_ready ||
    die "kube-apiserver did not become ready (log: $E2E_LOGS/kube-apiserver.log)"
  # RBAC bootstrap (system:kube-scheduler, system:node...) is done by a post-start hook; wait for it.
  wait_until 60 "bootstrap RBAC roles" k get clusterrole system:kube-scheduler ||
    die "kube-apiserver did not create its bootstrap RBAC roles"
}

# The `kubernetes` Service's cluster IP as a local address of the host (see start_apiserver).
ensure_service_ip() {
  ip -o addr show dev lo | grep -q " $E2E_SERVICE_IP/32 " && return 0
  ip addr add "$E2E_SERVICE_IP/32" dev lo ||
    die "could not add $E2E_SERVICE_IP/32 to the loopback device (pods reach the API server there)"
}
remove_service_ip() { ip addr del "$E2E_SERVICE_IP/32" dev lo 2>/dev/null || true; }

# kube-controller-manager: DaemonSets, Deployments, ReplicaSets, ServiceAccounts and their tokens,
# endpoints, garbage collection, node lifecycle: what the chart's workloads need to run.
start_controller_manager() {
  start_daemon kube-controller-manager "$E2E_K8S_BIN/kube-controller-manager" \
    --kubeconfig "$E2E_WORK/kubeconfig/kube-controller-manager.kubeconfig" \
    --use-service-account-credentials \
    --service-account-private-key-file "$E2E_CERTS/sa.key" \
    --root-ca-file "$E2E_CERTS/ca.crt" \
    --service-cluster-ip-range "$E2E_SERVICE_CIDR" \
    --leader-elect=false --port 0 --secure-port 0 \
    --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 \
    --v 1
  wait_until 60 "the ServiceAccount default/default" k get serviceaccount -n default default ||
    die "kube-controller-manager created no ServiceAccount (log: $E2E_LOGS/kube-controller-manager.log)"
  # Test pods need no API access: without a token to mount they do not wait for one.
  k patch serviceaccount -n default default -p '{"automountServiceAccountToken": false}' \
    >>"$E2E_LOGS/kubectl.log" 2>&1 || die "could not patch the ServiceAccount default/default"
}

apply_rbac() {
  log "applying deploy/rbac"
  k apply -f "$E2E_REPO/deploy/rbac/" >>"$E2E_LOGS/kubectl.log" 2>&1 ||
    die "kubectl apply -f deploy/rbac failed (see $E2E_LOGS/kubectl.log)"
}

# register_webhook [port]: (re-)registers the webhook at https://127.0.0.1:<port, default
# E2E_WEBHOOK_PORT>/webhook.
register_webhook() {
  local port=${1:-$E2E_WEBHOOK_PORT}
  log "registering the mutating webhook at https://127.0.0.1:$port/webhook"
  WEBHOOK_URL="https://127.0.0.1:$port/webhook" \
    CA_BUNDLE=$(base64 -w0 <"$E2E_CERTS/ca.crt") \
    render "$E2E_REPO/deploy/webhook/mutating-webhook-url.yaml" "$E2E_WORK/webhook.yaml" \
    WEBHOOK_URL CA_BUNDLE
  k apply -f "$E2E_WORK/webhook.yaml" >>"$E2E_LOGS/kubectl.log" 2>&1 ||
    die "could not register the MutatingWebhookConfiguration (see $E2E_LOGS/kubectl.log)"
}

# render_kube_scheduler_config <out> <extender port>: deploy/kube-scheduler/config-v1beta1.yaml
# for this cluster. With E2E_KUBE_PREEMPTION=1 (the default) the profile's
# `plugins: postFilter: disabled: [DefaultPreemption]` is taken out: the shipped file keeps
# kube-scheduler's preemption off for stock 1.20, whose kube-scheduler never calls the extender's
# preempt verb and panics in its own; this cluster's kube-scheduler carries the backported fixes
# (tests/e2e/k8s-patches/kube-scheduler-preemption-extenders.patch).
render_kube_scheduler_config() {
  SCHEDULER_NAME=$E2E_SCHEDULER_NAME \
    SCHEDULER_KUBECONFIG="$E2E_WORK/kubeconfig/kube-scheduler.kubeconfig" \
    EXTENDER_URL="http://127.0.0.1:$2" \
    render "$E2E_REPO/deploy/kube-scheduler/config-v1beta1.yaml" "$1" \
    SCHEDULER_NAME SCHEDULER_KUBECONFIG EXTENDER_URL
  [[ ${E2E_KUBE_PREEMPTION:-1} == 1 ]] || return 0
  # Exactly the four lines of that block, in that order; anything else is a changed file the
  # harness must be taught about, not something to pass over silently.
  local block
  block=$(grep -c -x -e '  plugins:' -e '    postFilter:' -e '      disabled:' \
    -e '      - name: DefaultPreemption' "$1" || true)
  [[ $block == 4 ]] || die "deploy/kube-scheduler/config-v1beta1.yaml: the DefaultPreemption block to enable for e2e was not found as expected"
  awk '
    $0 == "  plugins:" { held = $0; next }
    held != "" && $0 == "    postFilter:" { held = held "\n" $0; next }
    held != "" && $0 == "      disabled:" { held = held "\n" $0; next }
    held != "" && $0 == "      - name: DefaultPreemption" { held = ""; dropped = 1; next }
    held != "" { print held; held = "" }
    { print }
    END { if (!dropped) exit 1 }' "$1" >"$1.tmp" && mv "$1.tmp" "$1" ||
    die "could not enable DefaultPreemption in $1"
  ! grep -q DefaultPreemption "$1" || die "DefaultPreemption still disabled in $1"
}

start_kube_scheduler() {
  render_kube_scheduler_config "$E2E_WORK/kube-scheduler.yaml" "$E2E_EXTENDER_PORT"
  start_daemon kube-scheduler "$E2E_K8S_BIN/kube-scheduler" \
    --config "$E2E_WORK/kube-scheduler.yaml" \
    --port "$E2E_SCHEDULER_HEALTH_PORT" --address 127.0.0.1 --secure-port 0 --v 2
  wait_until 30 "kube-scheduler /healthz" \
    curl -sf "http://127.0.0.1:$E2E_SCHEDULER_HEALTH_PORT/healthz" ||
    die "kube-scheduler did not become healthy (log: $E2E_LOGS/kube-scheduler.log)"
}

# ---- nodes ----------------------------------------------------------------------------------
# Node i (1-based) gets its own containerd, CNI bridge, kubelet ports and device-plugin folder.
# kubelet 1.20 hard-codes /var/lib/kubelet/device-plugins, and the chart's pods mount host paths
# (that folder, the hook folder, kubelet's pod-resources folder) that must be the node's own. So
# each node's containerd and kubelet share a private mount namespace (held by a process of its
# own, `ns-<node>`) in which those paths are bind mounts of the node's folders: a hostPath volume
# resolves per node, as on real nodes. Container logs too: each kubelet deletes the log folders in
# /var/log/pods of pods it does not run, so in a shared folder the other node's logs were lost.

node_dir() { echo "$E2E_WORK/nodes/$1"; }
node_sock() { echo "/run/vgpu-e2e/$1/containerd.sock"; }
node_device_plugin_dir() { echo "$(node_dir "$1")/device-plugins"; }
# kubelet's pod-resources folder (under its --root-dir), where its pod-resources socket lives.
node_pod_resources_dir() { echo "$(node_dir "$1")/kubelet/pod-resources"; }
# The chart's hook folder (global.gpuHookPath) as the node's containers see it.
E2E_CHART_HOOK=/run/vgpu-e2e/hook
node_chart_hook_dir() { echo "$(node_dir "$1")/chart-hook"; }
# The node's container logs: its /var/log/pods (CRI log files) and /var/log/containers (kubelet's
# links to them). pod_log_files reads them from the host.
node_pod_logs_dir() { echo "$(node_dir "$1")/pod-logs"; }
node_container_logs_dir() { echo "$(node_dir "$1")/container-logs"; }
# pod_log_files <folder>: the CRI log files, on every node, of the pods whose /var/log/pods folder
# (<namespace>_<pod>_<uid>) matches the glob <folder>.
pod_log_files() {
  local f
  # shellcheck disable=SC2231 # $1 is a glob on purpose
  for f in "$E2E_WORK"/nodes/*/pod-logs/$1/*/*.log; do
    [[ -f $f ]] && echo "$f"
  done
  return 0
}

# start_node_namespace <node>: the mount namespace of the node's containerd and kubelet.
start_node_namespace() {
  local node=$1 dp hook pr logs links
  dp=$(node_device_plugin_dir "$node")
  hook=$(node_chart_hook_dir "$node")
  pr=$(node_pod_resources_dir "$node")
  logs=$(node_pod_logs_dir "$node")
  links=$(node_container_logs_dir "$node")
  mkdir -p "$dp" "$hook" "$pr" "$logs" "$links" /var/lib/kubelet/device-plugins \
    /var/lib/kubelet/pod-resources "$E2E_CHART_HOOK" /var/log/pods /var/log/containers
  start_daemon "ns-$node" unshare --mount --propagation private -- /bin/sh -c \
    'mount --bind "$0" /var/lib/kubelet/device-plugins && mount --bind "$1" "$2" &&
     mount --bind "$3" /var/lib/kubelet/pod-resources && mount --bind "$4" /var/log/pods &&
     mount --bind "$5" /var/log/containers && exec sleep infinity' \
    "$dp" "$hook" "$E2E_CHART_HOOK" "$pr" "$logs" "$links"
  wait_until 10 "mount namespace of $node" node_exec "$node" mountpoint -q /var/log/containers ||
    die "could not set up the mount namespace of $node (log: $E2E_LOGS/ns-$node.log)"
}

# node_exec <node> <command...>: runs a command in the node's mount namespace.
node_exec() {
  local node=$1 prefix
  shift
  prefix=$(node_ns_prefix "$node") || return 1
  # shellcheck disable=SC2086 # the prefix is words on purpose
  $prefix "$@"
}
# The nsenter prefix that enters the node's mount namespace (also for start_daemon).
node_ns_prefix() {
  local pid
  pid=$(cat "$E2E_PIDS/ns-$1.pid" 2>/dev/null) || return 1
  echo nsenter --mount="/proc/$pid/ns/mnt" --
}

start_containerd() {
  local node=$1 i=$2 dir
  dir=$(node_dir "$node")
  mkdir -p "$dir/cni" "$dir/containerd" "/run/vgpu-e2e/$node"
  # The addresses handed out are kept in the run's own directory: in host-local's default
  # (/var/lib/cni/networks) the sandboxes that a run's teardown kills without a CNI DEL kept
  # theirs, and after ~8 runs on one machine a node's /24 was used up ("no IP addresses
  # available"), so the chart's pods never started.
  cat >"$dir/cni/10-e2e.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "e2e-$node",
 "plugins": [{"type": "bridge", "bridge": "e2ebr$i", "isGateway": true, "ipMasq": false,
              "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.$i.0/24"}]],
                       "dataDir": "$dir/cni/ipam", "routes": [{"dst": "0.0.0.0/0"}]}},
             {"type": "loopback"}]}
EOF
  cat >"$dir/containerd.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "/run/vgpu-e2e/$node/state"
[grpc]
  address = "$(node_sock "$node")"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$E2E_PAUSE_IMAGE"
  # Sandboxes ask for oom_score_adj -998; without CAP_SYS_RESOURCE (container sandboxes, CI
  # runners) runc then dies with "can't get final child's PID from pipe". Clamp instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "${E2E_SNAPSHOTTER:-overlayfs}"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "${E2E_RUNC:-runc}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni"
EOF
  # shellcheck disable=SC2046 # the prefix is words on purpose
  start_daemon "containerd-$node" $(node_ns_prefix "$node") containerd --config "$dir/containerd.toml"
  wait_until 30 "containerd of $node" ctr --address "$(node_sock "$node")" version ||
    die "containerd of $node did not start (log: $E2E_LOGS/containerd-$node.log)"
  import_images "$(node_sock "$node")"
}

start_kubelet() {
  local node=$1 i=$2 dir
  dir=$(node_dir "$node")
  mkdir -p "$dir/kubelet" "$(node_device_plugin_dir "$node")" /var/lib/kubelet/device-plugins
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $((11250 + 10 * i))
healthzBindAddress: 127.0.0.1
healthzPort: $((11248 + 10 * i))
readOnlyPort: 0
tlsCertFile: $E2E_CERTS/kubelet-serving-$node.crt
tlsPrivateKeyFile: $E2E_CERTS/kubelet-serving-$node.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $E2E_CERTS/ca.crt}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
nodeStatusUpdateFrequency: 4s
resolvConf: ""
EOF
  generate_node_cert "$node"
  # shellcheck disable=SC2046 # the prefix is words on purpose
  start_daemon "kubelet-$node" $(node_ns_prefix "$node") \
    "$E2E_K8S_BIN/kubelet" --config "$dir/kubelet.yaml" \
    --kubeconfig "$E2E_WORK/kubeconfig/kubelet-$node.kubeconfig" \
    --container-runtime remote \
    --container-runtime-endpoint "unix://$(node_sock "$node")" \
    --root-dir "$dir/kubelet" --cert-dir "$dir/kubelet/pki" \
    --hostname-override "$node" --node-ip 127.0.0.1 \
    --node-labels "gpu=on,vgpu-e2e/node-index=$i" --v 2
}

node_ready() {
  [[ $(k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

# kube-controller-manager lifts the not-ready taint once the node is Ready; not waiting for it
# keeps the start quick.
untaint_node() {
  k taint node "$1" node.kubernetes.io/not-ready- >/dev/null 2>&1 || true
  k taint node "$1" node.kubernetes.io/unreachable- >/dev/null 2>&1 || true
}

start_node() {
  local node=$1 i=$2
  start_node_namespace "$node"
  start_containerd "$node" "$i"
  start_kubelet "$node" "$i"
  wait_until 120 "node $node Ready" node_ready "$node" || {
    k describe node "$node" >&2 || true
    die "node $node did not become Ready (log: $E2E_LOGS/kubelet-$node.log)"
  }
  untaint_node "$node"
  log "node $node is Ready"
}

stop_node_processes() {
  local node=$1
  stop_daemon "device-plugin-$node"
  stop_daemon "kubelet-$node"
  # Sandboxes and containers of this node go with its containerd; their shims are reaped by it.
  stop_daemon "containerd-$node"
  stop_daemon "ns-$node"
}
