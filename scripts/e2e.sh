#!/usr/bin/env bash
# End-to-end tests on a real Kubernetes on one machine (issue 7): etcd, kube-apiserver (RBAC,
# ServiceAccounts), kube-controller-manager, containerd + kubelet per fake-GPU node. First against
# our daemons started by hand (kube-scheduler with our extender, webhook, device plugin, node
# monitor, Prometheus), then against the system installed with `helm install` of charts/vgpu.
# Needs root (kubelet, containerd, mount namespaces). Kubernetes is built once from Debian's source
# package into $E2E_CACHE (default /var/cache/vgpu-e2e) and reused. See docs/e2e.md.
#
#   scripts/e2e.sh                 everything; prints "N passed, N failed"; exit 1 if any failed
#   scripts/e2e.sh --cluster-only  control plane + nodes without our binaries (harness check)
#   scripts/e2e.sh --only 'REGEX'  only the scenarios whose name matches
#   scripts/e2e.sh --keep          leave the cluster running (stop later with --stop)
#   scripts/e2e.sh --stop          stop what a kept run left running
set -euo pipefail

E2E_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for f in common install certs images cluster vgpu monitor pods scenarios scenarios_policy scenarios_extres chart; do
  # shellcheck source=/dev/null
  source "$E2E_REPO/tests/e2e/lib/$f.sh"
done

# Stops every process this run (or an earlier, interrupted one) started and removes what they
# left in the kernel: containers, mounts, bridges.
stop_all_and_clean() {
  local node_dir node sock
  # Kubelets and the controller manager first: they would start again the containers killed
  # below (the chart's pods restart always, and their DaemonSets and Deployments replace them).
  for node_dir in "$E2E_WORK"/nodes/*; do
    [[ -d $node_dir ]] && stop_daemon "kubelet-$(basename "$node_dir")"
  done
  stop_daemon kube-controller-manager
  for node_dir in "$E2E_WORK"/nodes/*; do
    [[ -d $node_dir ]] || continue
    node=$(basename "$node_dir")
    sock=$(node_sock "$node")
    if [[ -S $sock ]] && daemon_alive "containerd-$node"; then
      local t
      for t in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
        ctr --address "$sock" -n k8s.io tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
      done
      sleep 1
      for t in $(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
        ctr --address "$sock" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true
      done
    fi
  done
  stop_all
  # Mounts made by containerd and kubelet under our folders, deepest first.
  local m
  for m in $(awk -v w="$E2E_WORK" -v r=/run/vgpu-e2e '$2 ~ "^"w || $2 ~ "^"r {print $2}' \
    /proc/self/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  # Container logs kubelet left for the test pods (namespace default) and the chart's pods.
  rm -rf /var/log/pods/default_* /var/log/pods/kube-system_vgpu-*
  remove_service_ip
  for m in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep '^e2ebr' || true); do
    ip link del "$m" 2>/dev/null || true
  done
}

cluster_only=false keep=false only=""
while (($#)); do
  case $1 in
  --cluster-only) cluster_only=true ;;
  --keep) keep=true ;;
  --only)
    only=$2
    shift
    ;;
  --stop)
    stop_all_and_clean
    exit 0
    ;;
  -h | --help)
    sed -n '2,14p' "$0"
    exit 0
    ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

if [[ $(id -u) -ne 0 ]]; then
  # 77: CTest's SKIP_RETURN_CODE for this test.
  echo "e2e: skipped: must run as root (kubelet, containerd and mount namespaces need it)" >&2
  exit 77
fi

teardown() {
  local rc=$?
  if $keep && ((rc == 0)); then
    log "cluster left running (--keep): KUBECONFIG=$E2E_WORK/kubeconfig/admin.kubeconfig;" \
      "stop with: scripts/e2e.sh --stop"
    return
  fi
  if ((rc != 0)); then dump_logs; fi
  stop_all_and_clean
  log "logs of this run: $E2E_LOGS"
}

main() {
  local t0=$SECONDS
  install_packages
  build_k8s
  stop_all_and_clean
  rm -rf "$E2E_WORK" "$E2E_LOGS"
  mkdir -p "$E2E_WORK" "$E2E_LOGS"
  trap teardown EXIT
  trap 'exit 130' INT TERM
  $cluster_only || build_vgpu

  generate_certs
  build_images
  start_etcd
  start_apiserver
  apply_rbac
  start_controller_manager
  if ! $cluster_only; then
    if have_scheduler; then
      start_vgpu_scheduler
      register_webhook
    else
      log "WARNING: no vgpu-scheduler binary ($(scheduler_bin)): scenarios 2-7 will fail"
    fi
  fi
  start_kube_scheduler
  local i
  for i in $(seq 1 "${E2E_NODES:-2}"); do
    start_node "e2e-node-$i" "$i"
    if ! $cluster_only; then
      start_device_plugin "e2e-node-$i"
      if have_monitor; then start_monitor "e2e-node-$i" "$i"; fi
    fi
  done
  if ! $cluster_only && have_monitor; then start_prometheus; fi
  log "cluster up in $((SECONDS - t0)) s"

  if $cluster_only; then
    run_scenario 0-cluster-ready scenario_cluster_ready
  else
    run_all_scenarios "$only"
  fi
  log "$E2E_PASSED passed, $E2E_FAILED failed${E2E_FAILED_NAMES:+ (${E2E_FAILED_NAMES[*]})}" \
    "in $((SECONDS - t0)) s"
  echo "$E2E_PASSED passed, $E2E_FAILED failed"
  ((E2E_FAILED == 0))
}

main
