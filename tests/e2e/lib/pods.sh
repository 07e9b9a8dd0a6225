# Helpers to create GPU pods, wait for their placement and read what the scheduler and the device
# plugin wrote on them. Every pod of the suite carries the label vgpu-e2e=<scenario tag>.

E2E_NS=default

# pod_json <name> <tag> <gpu> <gpumem MiB> <gpucores> [annotations JSON] [node or ""]
# No schedulerName: the webhook must set it. Requests nothing but HAMi resources.
pod_json() {
  local name=$1 tag=$2 gpu=$3 mem=$4 cores=$5 ann=${6:-'{}'} node=${7:-}
  jq -n --arg name "$name" --arg tag "$tag" --arg gpu "$gpu" --arg mem "$mem" --arg cores "$cores" \
    --argjson ann "$ann" --arg node "$node" --arg image "$E2E_BUSYBOX_IMAGE" '
    {apiVersion: "v1", kind: "Pod",
     metadata: {name: $name, labels: {"vgpu-e2e": $tag}, annotations: $ann},
     spec: ({terminationGracePeriodSeconds: 0,
            containers: [{name: "main", image: $image, imagePullPolicy: "Never",
              command: ["/bin/sh", "-c", "env | sort; exec sleep 3600"],
              resources: {limits: {"nvidia.com/gpu": $gpu, "nvidia.com/gpumem": $mem,
                                   "nvidia.com/gpucores": $cores}}}]}
            + (if $node == "" then {} else {nodeSelector: {"kubernetes.io/hostname": $node}} end))}'
}

# create_pods <file with one pod JSON per line>: one kubectl call for all (a v1 List).
create_pods() {
  jq -s '{apiVersion: "v1", kind: "List", items: .}' "$1" | k create -f - >/dev/null
}

pod_annotation() {
  k get pod -n "$E2E_NS" "$1" -o json | jq -r --arg key "$2" '.metadata.annotations[$key] // ""'
}

# All pods with a tag, as a JSON array of {name, node, phase, bind, allocated, sched}.
pods_state() {
  local json
  json=$(k get pods -n "$E2E_NS" -l "vgpu-e2e=$1" -o json 2>/dev/null) || json='{"items": []}'
  jq -c '[.items[] | {
    name: .metadata.name, node: (.spec.nodeName // ""), phase: .status.phase,
    sched: (.spec.schedulerName // ""),
    bind: (.metadata.annotations["hami.io/bind-phase"] // ""),
    allocated: (.metadata.annotations["hami.io/vgpu-devices-allocated"] // "")}]' <<<"$json"
}

# wait_bind_success <tag> <count> <timeout s> <timings file>: waits until <count> pods of the tag
# show hami.io/bind-phase=success and appends, per pod, the milliseconds from $E2E_T0_MS (set by
# the caller just before creating the pods) to the first poll that saw success.
wait_bind_success() {
  local tag=$1 count=$2 timeout=$3 timings=$4
  local deadline=$((SECONDS + timeout)) state name now
  # Pods already timed by an earlier call for the same tag are not timed again.
  local seen_file=$timings.seen
  touch "$seen_file"
  while ((SECONDS < deadline)); do
    state=$(pods_state "$tag")
    now=$(date +%s%3N)
    for name in $(jq -r '.[] | select(.bind == "success") | .name' <<<"$state"); do
      if ! grep -qx "$name" "$seen_file"; then
        echo "$name" >>"$seen_file"
        echo "$((now - E2E_T0_MS))" >>"$timings"
      fi
    done
    if (($(jq '[.[] | select(.bind == "success")] | length' <<<"$state") >= count)); then
      return 0
    fi
    if jq -e '[.[] | select(.bind == "failed")] | length > 0' <<<"$state" >/dev/null; then
      fail "pods of '$tag' with hami.io/bind-phase=failed: $(jq -c '[.[] | select(.bind == "failed") | .name]' <<<"$state")"
      return 1
    fi
    sleep 0.25
  done
  fail "only $(jq '[.[] | select(.bind == "success")] | length' <<<"$state") of $count pods of '$tag'" \
    "reached hami.io/bind-phase=success in ${timeout}s; state: $(jq -c '[.[] | {name, node, bind, sched}]' <<<"$state")"
  stuck_pods_report "$tag"
}

# stuck_pods_report <tag>: for each pod of the tag whose bind phase is not success, what the API
# server, kubelet and the node's device plugin say about it (phase, reason, message, events, log
# lines naming it), so that a run that failed on a CI box can be explained from its output alone.
stuck_pods_report() {
  local json name uid node plugin_logs
  json=$(k get pods -n "$E2E_NS" -l "vgpu-e2e=$1" -o json 2>/dev/null) || return 0
  jq -r '.items[] | select(.metadata.annotations["hami.io/bind-phase"] != "success") |
    "\(.metadata.name) \(.metadata.uid) \(.spec.nodeName // "-")"' <<<"$json" |
    while read -r name uid node; do
      log "stuck pod $name: $(jq -c --arg n "$name" '.items[] | select(.metadata.name == $n) |
        {node: .spec.nodeName, phase: .status.phase, reason: .status.reason,
         message: .status.message, bind_time: .metadata.annotations["hami.io/bind-time"],
         allocated: .metadata.annotations["hami.io/vgpu-devices-allocated"],
         to_allocate: .metadata.annotations["hami.io/vgpu-devices-to-allocate"],
         containers: [.status.containerStatuses[]?.state | keys[0]]}' <<<"$json")"
      log "  events: $(k get events -n "$E2E_NS" --field-selector "involvedObject.name=$name" \
        -o json 2>/dev/null | jq -c '[.items[] | "\(.reason): \(.message)"]')"
      [[ $node == - ]] && continue
      grep -h -- "$name\|$uid" "$E2E_LOGS/kubelet-$node.log" 2>/dev/null | tail -n 8 |
        sed 's/^/  kubelet: /' >&2 || true
      mapfile -t plugin_logs < <(pod_log_files 'kube-system_vgpu-device-plugin-*')
      grep -h -- "$name" "${plugin_logs[@]}" "$E2E_LOGS/device-plugin-$node.log" 2>/dev/null |
        tail -n 8 | sed 's/^/  device plugin: /' >&2 || true
    done
}

# delete_pods <tag>: force-deletes the tag's pods and waits until the API no longer has them.
delete_pods() {
  k delete pods -n "$E2E_NS" -l "vgpu-e2e=$1" --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
  wait_until 60 "pods of $1 deleted" no_pods "$1"
}

no_pods() { [[ -z $(k get pods -n "$E2E_NS" -l "vgpu-e2e=$1" -o name) ]]; }

# Per-GPU totals of the tag's placements: JSON {uuid: {pods, mem, cores}} from devices-allocated.
gpu_usage() { pods_state "$1" | usage_from_state; }
# The same from a pods_state array on stdin.
usage_from_state() {
  jq -c '
    [.[] | .allocated | split(";")[] | split(":")[] | select(. != "") | split(",")
      | {uuid: .[0], mem: (.[2] | tonumber), cores: (.[3] | tonumber)}]
    | group_by(.uuid) | map({key: .[0].uuid,
        value: {pods: length, mem: (map(.mem) | add), cores: (map(.cores) | add)}}) | from_entries'
}

# within_gpu_limits <usage JSON from gpu_usage>: no GPU over its memory, cores or slots.
within_gpu_limits() {
  jq -e --argjson m "$E2E_FAKE_GPU_MEMORY" --argjson s "$E2E_SPLIT_COUNT" \
    'all(.[]; .mem <= $m and .cores <= 100 and .pods <= $s)' <<<"$1" >/dev/null
}

# percentile <p> <file of numbers>: nearest-rank percentile.
percentile() {
  sort -n "$2" | awk -v p="$1" '{v[NR] = $1} END {
    if (NR == 0) { print "n/a"; exit } r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1;
    print v[r] }'
}
