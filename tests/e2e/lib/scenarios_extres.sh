# ---- 20: extended resources (issue 43 item 5) --------------------------------------------------
# The device plugin writes each node's vGPU memory and cores into the Node's status.capacity
# (--advertise-extended-resources, docs/scheduler.md "Extended resources"). The chart run turns it
# on for all its scenarios (chart.sh, chart_run_values), so every chart scenario's pods pass
# kubelet's admission with these resources counted; by hand (E2E_HAND) node 1's plugin restarts
# with the flag, and at the end without it. Checked: capacity = the sums of the node's registered
# inventory (healthy GPUs), allocatable the same (only kubelet writes allocatable: it took our
# capacity into its own status update and kept it), kubelet's other entries there, a GPU pod
# admitted and running; by hand also that a start without the flag removes both again.

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
extres_restart_plugin() {
  stop_daemon "device-plugin-$1"
  E2E_DEVICE_PLUGIN_ARGS="${E2E_DEVICE_PLUGIN_ARGS:-} $2" start_device_plugin "$1"
}

scenario_extended_resources() {
  local t0=$SECONDS node nodes want
  if [[ $E2E_MODE == hand ]]; then
    nodes=$E2E_NODE1
    # Whatever happens below, node 1's plugin ends as the other hand scenarios expect it.
    trap 'extres_restart_plugin "$E2E_NODE1" ""' EXIT
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
  fi
  log "extended resources: $(for node in $nodes; do printf '%s capacity %s; ' "$node" \
    "$(extres_status "$node" capacity)"; done)checked in $((SECONDS - t0)) s"
}
