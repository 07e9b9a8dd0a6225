# ---- 20: extended resources (issue 43 item 5) --------------------------------------------------
# The device plugin writes each node's vGPU memory and cores into the Node's status.capacity
# (--advertise-extended-resources, docs/scheduler.md "Extended resources"). The chart run turns it
# on for all its scenarios (chart.sh, chart_run_values), so every chart scenario's pods pass
# kubelet's admission with these resources counted; by hand (E2E_HAND) node 1's plugin restarts
# with the flag and deploy/rbac/extended-resources/ applied, and at the end without the flag.
# Checked: capacity = the sums of the node's registered inventory (healthy GPUs), allocatable the
# same (only kubelet writes allocatable: it took our capacity into its own status update and kept
# it), kubelet's other entries there, a GPU pod admitted and running. Turned off, as documented:
# by hand (RBAC still granted) both entries and the mark go; through the chart (the rule leaves
# with the value) they stay, each plugin says so once, the documented removal by hand clears
# them, and turning the value on again brings them back.

# extres_want <node>: "<memory> <cores>", the healthy GPUs' devmem and devcore sums of the
# node's inventory annotation (JSON, either writer's default; false fields may be left out).
extres_want() {
  k get node "$1" -o json | jq -r '.metadata.annotations["hami.io/node-nvidia-register"] // "[]"
    | fromjson | [.[] | select(.health == true)]
    | "\(map(.devmem) | add // 0) \(map(.devcore) | add // 0)"'
}
# extres_status <node> <capacity|allocatable>: "<memory> <cores>" as the Node's status has them.
extres_status() {
  k get node "$1" -o json | jq -r --arg f "$2" '.status[$f] as $s
    | "\($s["nvidia.com/gpumem"] // "absent") \($s["nvidia.com/gpucores"] // "absent")"'
}
extres_status_is() { [[ $(extres_status "$1" "$2") == "$3" ]]; }
extres_node_clean() {
  extres_status_is "$1" capacity "absent absent" && extres_status_is "$1" allocatable "absent absent" &&
    [[ -z $(k get node "$1" -o json | jq -r '.metadata.annotations["vgpu.io/extended-resources"] // ""') ]]
}
extres_mark() { k get node "$1" -o json | jq -r '.metadata.annotations["vgpu.io/extended-resources"] // ""'; }
# extres_remove_by_hand <node>: docs/scheduler.md's removal for kubectl < 1.24 (no
# --subresource): a JSON patch of the status subresource through `kubectl proxy`, then the mark.
extres_remove_by_hand() {
  local node=$1 port=18093 rc=0
  start_daemon kubectl-proxy-extres "$E2E_K8S_BIN/kubectl" --kubeconfig "$E2E_WORK/kubeconfig/admin.kubeconfig" \
    proxy --port "$port"
  wait_until 15 "kubectl proxy on $port" curl -sf "http://127.0.0.1:$port/version" || rc=1
  if ((rc == 0)); then
    curl -sf -X PATCH -H 'Content-Type: application/json-patch+json' \
      --data '[{"op": "remove", "path": "/status/capacity/nvidia.com~1gpumem"},
               {"op": "remove", "path": "/status/capacity/nvidia.com~1gpucores"}]' \
      "http://127.0.0.1:$port/api/v1/nodes/$node/status" >>"$E2E_LOGS/kubectl.log" 2>&1 || rc=1
  fi
  stop_daemon kubectl-proxy-extres
  ((rc == 0)) && k annotate node "$node" vgpu.io/extended-resources- >/dev/null
}
# extres_plugin_said <node> <words>: the node's device plugin pod (chart) logged <words>.
extres_plugin_said() {
  local pod
  pod=$(chart_pods hami-device-plugin "$1")
  [[ -n $pod ]] && pod_log_files "kube-system_${pod}_*" | xargs -r grep -lF "$2" >/dev/null
}
extres_restart_plugin() {
  stop_daemon "device-plugin-$1"
  E2E_DEVICE_PLUGIN_ARGS="${E2E_DEVICE_PLUGIN_ARGS:-} $2" start_device_plugin "$1"
}

scenario_extended_resources() {
  local t0=$SECONDS node nodes want seen=""
  if [[ $E2E_MODE == hand ]]; then
    nodes=$E2E_NODE1
    # Whatever happens below, node 1's plugin ends as the other hand scenarios expect it.
    trap 'extres_restart_plugin "$E2E_NODE1" ""' EXIT
    k apply -f "$E2E_REPO/deploy/rbac/extended-resources/" >>"$E2E_LOGS/kubectl.log" 2>&1 ||
      fail "kubectl apply -f deploy/rbac/extended-resources/ failed (see $E2E_LOGS/kubectl.log)"
    extres_restart_plugin "$E2E_NODE1" --advertise-extended-resources
  else
    nodes=$(k get nodes -o name | cut -d/ -f2)
  fi
  for node in $nodes; do
    want=$(extres_want "$node")
    [[ $want != "0 0" ]] || fail "node $node: its inventory registers no healthy GPU memory"
    wait_until 15 "status.capacity of $node = $want" extres_status_is "$node" capacity "$want" ||
      fail "node $node: status.capacity nvidia.com/gpumem, gpucores is '$(extres_status "$node" capacity)'," \
        "expected '$want' (the healthy GPUs of its inventory)"
    # nodeStatusUpdateFrequency is 4 s (cluster.sh): kubelet's next update derives allocatable.
    wait_until 15 "status.allocatable of $node = $want" extres_status_is "$node" allocatable "$want" ||
      fail "node $node: kubelet did not derive allocatable from our capacity: allocatable is" \
        "'$(extres_status "$node" allocatable)', capacity '$(extres_status "$node" capacity)'"
    k get node "$node" -o json | jq -e '.status.capacity | has("cpu") and has("memory") and has("pods")
      and (.["nvidia.com/gpu"] // "0" | tonumber > 0)' >/dev/null ||
      fail "node $node: kubelet's own capacity entries are gone: $(k get node "$node" -o json | jq -c .status.capacity)"
    seen+="$node gpumem gpucores $want; "
  done

  # kubelet now counts gpumem/gpucores at admission: a pod asking for them still runs.
  node=${nodes%%$'\n'*}
  pod_json extres-1 extres 1 4000 25 '{}' "$node" >"$E2E_WORK/extres.jsonl"
  E2E_T0_MS=$(now_ms)
  create_pods "$E2E_WORK/extres.jsonl"
  wait_bind_success extres 1 30 "$E2E_TIMINGS/extres.ms"
  wait_until 20 "extres-1 running" container_running extres-1 ||
    fail "extres-1 was not started by kubelet: phase $(k get pod extres-1 -o jsonpath='{.status.phase}')," \
      "$(k get pod extres-1 -o jsonpath='{.status.reason} {.status.message}')"
  extres_status_is "$node" capacity "$(extres_want "$node")" ||
    fail "node $node: capacity changed while a pod ran: '$(extres_status "$node" capacity)'"
  delete_pods extres

  if [[ $E2E_MODE == hand ]]; then
    trap - EXIT
    extres_restart_plugin "$E2E_NODE1" ""
    wait_until 15 "extended resources of $E2E_NODE1 withdrawn" extres_node_clean "$E2E_NODE1" ||
      fail "node $E2E_NODE1: after a start without the flag capacity is" \
        "'$(extres_status "$E2E_NODE1" capacity)', allocatable '$(extres_status "$E2E_NODE1" allocatable)'"
    k delete -f "$E2E_REPO/deploy/rbac/extended-resources/" >>"$E2E_LOGS/kubectl.log" 2>&1 || true
  else
    extres_chart_off_and_on "$nodes"
  fi
  log "extended resources: capacity = allocatable = inventory: ${seen}checked in $((SECONDS - t0)) s"
}

# Through the chart: the value off takes the nodes/status rule with it, so the entries stay (the
# plugins may not withdraw them), each plugin says so, the removal by hand clears them; the value
# on again advertises them again.
extres_chart_off_and_on() {
  local nodes=$1 node want words="extended resources left in the node's capacity"
  declare -A kept
  for node in $nodes; do kept[$node]=$(extres_status "$node" capacity); done
  chart_release upgrade --set devicePlugin.advertiseExtendedResources=false
  k get clusterrole "$(chart_device_plugin)" -o json | jq -e '[.rules[].resources[]] | index("nodes/status") | not' \
    >/dev/null || fail "value off: the device plugin's ClusterRole still grants nodes/status"
  for node in $nodes; do
    wait_until 30 "the device plugin of $node says what it left" extres_plugin_said "$node" "$words" ||
      fail "node $node: its device plugin (value off, no nodes/status rule) never logged '$words'"
    [[ $(extres_status "$node" capacity) == "${kept[$node]}" && -n $(extres_mark "$node") ]] ||
      fail "node $node: value off without the rule: capacity '$(extres_status "$node" capacity)'," \
        "mark '$(extres_mark "$node")'; expected them kept ('${kept[$node]}')"
    extres_remove_by_hand "$node" || fail "node $node: the removal by hand (docs/scheduler.md) failed"
    wait_until 15 "extended resources of $node removed by hand" extres_node_clean "$node" ||
      fail "node $node: after the removal by hand capacity is '$(extres_status "$node" capacity)'," \
        "allocatable '$(extres_status "$node" allocatable)'"
  done
  chart_release upgrade
  for node in $nodes; do
    want=$(extres_want "$node")
    wait_until 30 "status.allocatable of $node = $want again" extres_status_is "$node" allocatable "$want" ||
      fail "node $node: value on again: capacity '$(extres_status "$node" capacity)'," \
        "allocatable '$(extres_status "$node" allocatable)', expected '$want'"
  done
  log "extended resources: value off kept them (each plugin said so), removed by hand, on again"
}
