# Shared helpers for the end-to-end harness: logging, waiting, assertions, process bookkeeping.
# Sourced by scripts/e2e.sh; every other lib/*.sh file relies on the variables set here.

E2E_K8S_VERSION=${E2E_K8S_VERSION:-v1.20.2}
E2E_CACHE=${E2E_CACHE:-/var/cache/vgpu-e2e}
# The patches carried on Kubernetes (tests/e2e/k8s-patches) are part of the build's identity: a
# cached build without the current set is not reused.
E2E_K8S_PATCHES_ID=$(cat "$(dirname "${BASH_SOURCE[0]}")"/../k8s-patches/*.patch | sha256sum | cut -c1-12)
E2E_K8S_BIN=${E2E_K8S_BIN:-$E2E_CACHE/k8s-$E2E_K8S_VERSION-$E2E_K8S_PATCHES_ID/bin}
# Everything a run creates (certs, configs, state, logs) lives under one folder, wiped at start.
E2E_WORK=${E2E_WORK:-/var/lib/vgpu-e2e}
E2E_LOGS=${E2E_LOGS:-$E2E_WORK/logs}
E2E_CERTS=$E2E_WORK/certs
E2E_PIDS=$E2E_WORK/pids

# 443 and every address: pods reach the API server at the `kubernetes` Service, 10.96.0.1:443,
# an address of the host here (no kube-proxy; cluster.sh, start_apiserver).
E2E_APISERVER_PORT=${E2E_APISERVER_PORT:-443}
E2E_SERVICE_CIDR=10.96.0.0/16
E2E_SERVICE_IP=10.96.0.1
E2E_ETCD_PORT=${E2E_ETCD_PORT:-23790}
E2E_EXTENDER_PORT=${E2E_EXTENDER_PORT:-18080}
E2E_WEBHOOK_PORT=${E2E_WEBHOOK_PORT:-18443}
E2E_SCHEDULER_HEALTH_PORT=${E2E_SCHEDULER_HEALTH_PORT:-10251}
E2E_SCHEDULER_METRICS_PORT=${E2E_SCHEDULER_METRICS_PORT:-19395}
E2E_SERVER=https://127.0.0.1:$E2E_APISERVER_PORT

log() { printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
  log "FATAL: $*"
  exit 1
}

# kubectl bound to the admin kubeconfig of this run (kubectl from the same Kubernetes build).
k() { "$E2E_K8S_BIN/kubectl" --kubeconfig "$E2E_WORK/kubeconfig/admin.kubeconfig" "$@"; }

# wait_until <seconds> <description> <command...>: polls every 0.5 s; returns 1 on timeout.
# Timeouts here bound how long a broken cluster can hang the run; they are not performance checks.
wait_until() {
  local timeout=$1 what=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "timed out after ${timeout}s waiting for: $what"
  return 1
}

# start_daemon <name> <command...>: runs a process in the background, logs to $E2E_LOGS/<name>.log,
# records its pid so that stop_all can end it (and only it) later.
start_daemon() {
  local name=$1
  shift
  mkdir -p "$E2E_LOGS" "$E2E_PIDS"
  log "starting $name"
  setsid "$@" >>"$E2E_LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$E2E_PIDS/$name.pid"
}

daemon_alive() {
  local f=$E2E_PIDS/$1.pid
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# stop_daemon <name> [signal]: ends the process group started by start_daemon, waits up to 10 s,
# then kills it.
stop_daemon() {
  local name=$1 sig=${2:-TERM} f=$E2E_PIDS/$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -"$sig" -- "-$pid" 2>/dev/null || kill -"$sig" "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# Stops every daemon of this run, newest first (kubelets before containerd, apiserver before etcd).
stop_all() {
  [[ -d $E2E_PIDS ]] || return 0
  # Newest first, by mtime; our pid file names never contain blanks.
  local f
  # shellcheck disable=SC2045
  for f in $(ls -t "$E2E_PIDS"/*.pid 2>/dev/null); do
    stop_daemon "$(basename "$f" .pid)"
  done
}

# Prints the last lines of every log of this run (used when something failed).
dump_logs() {
  local f
  for f in "$E2E_LOGS"/*.log; do
    [[ -f $f ]] || continue
    echo "----- tail of $f -----" >&2
    tail -n "${E2E_LOG_TAIL:-25}" "$f" >&2
  done
}

# keep_system_pod_logs <scenario>: the kube-system pods' container logs as they are now (the
# chart's device plugins, schedulers and monitors) into the run's logs, where dump_logs finds them:
# kubelet removes them with their pods (at the chart's uninstall at the latest).
keep_system_pod_logs() {
  local f pod container
  for f in $(pod_log_files 'kube-system_*'); do
    pod=$(basename "$(dirname "$(dirname "$f")")" | cut -d_ -f2)
    container=$(basename "$(dirname "$f")")
    cp "$f" "$E2E_LOGS/failed-$1-$pod-$container-${f##*/}"  # ${f##*/}: <restart count>.log
  done
}

# Renders a template: every ${NAME} whose NAME is listed is replaced by the variable's value.
render() {
  local template=$1 out=$2
  shift 2
  local vars="" v
  for v in "$@"; do vars+="\${$v} "; done
  envsubst "$vars" <"$template" >"$out"
}

# ---- scenario bookkeeping -------------------------------------------------------------------
E2E_PASSED=0
E2E_FAILED=0
E2E_FAILED_NAMES=()
E2E_CURRENT=""

# fail <message>: records a failed assertion in the current scenario (the scenario returns 1).
fail() {
  log "ASSERTION FAILED [$E2E_CURRENT]: $*"
  return 1
}

no_e2e_pods() { [[ -z $(k get pods -n default -l vgpu-e2e -o name) ]]; }

run_scenario() {
  local name=$1 fn=$2
  E2E_CURRENT=$name
  log "=== scenario $name"
  # The subshell must not be an `if` condition: bash ignores `set -e` there, and every scenario
  # relies on it to stop at the first failing command.
  local rc
  set +e
  (
    set -eE -o pipefail
    "$fn"
  )
  rc=$?
  set -e
  ((rc == 0)) || keep_system_pod_logs "$name"
  # Whatever happened, the next scenario starts from an empty cluster: a failed assertion leaves
  # its pods behind, and they would hold GPUs the next scenario counts on.
  k delete pods -n default -l vgpu-e2e --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  wait_until 60 "pods of scenario $name deleted" no_e2e_pods || true
  if ((rc == 0)); then
    log "=== PASS $name"
    E2E_PASSED=$((E2E_PASSED + 1))
  else
    log "=== FAIL $name"
    E2E_FAILED=$((E2E_FAILED + 1))
    E2E_FAILED_NAMES+=("$name")
  fi
}
