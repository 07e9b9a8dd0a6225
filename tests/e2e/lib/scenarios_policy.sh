# ---- 19: GPU policies: mutex and a combined policy (hami.io/gpu-scheduler-policy) ----------------
# On one node of 2 GPUs: a shared pod takes a GPU; a "binpack" pod joins it (the fullest GPU); a
# "binpack,mutex" pod takes the other GPU although binpack ranks it last (mutex: only a GPU nobody
# uses); a "mutex" pod then finds no idle GPU and waits with ExclusiveDeviceAllocateConflict until
# the first GPU empties, and lands there. A contradicting combination is refused at admission.
# The fake GPUs all sit on NUMA node 0, so the numa key and numa-bind are covered by the unit
# tests (tests/core/sched/gpu_policy_test.cpp) and sim/scenarios/policies.yaml, not here.

policy_pod() { # <name> <policy> [gpucores]
  pod_json "$1" policies 1 $((E2E_FAKE_GPU_MEMORY / 4)) "${3:-10}" \
    "$(jq -cn --arg p "$2" '{"hami.io/gpu-scheduler-policy": $p}')" "$E2E_NODE1"
}

bind_phase_is() { [[ $(pod_annotation "$1" hami.io/bind-phase) == "$2" ]]; }

scenario_policies() {
  ((E2E_FAKE_GPUS == 2)) || fail "needs 2 GPUs per node"
  local f=$E2E_WORK/policies.jsonl t=$E2E_TIMINGS/policies.ms shared joined solo waiter out msg freed_ms
  # Each pod is timed from its own creation (wait_bind_success reads E2E_T0_MS).
  policy_pod pol-shared binpack >"$f"
  E2E_T0_MS=$(now_ms)
  create_pods "$f"
  wait_bind_success policies 1 60 "$t"
  shared=$(pod_gpus pol-shared)
  policy_pod pol-binpack binpack >"$f"
  E2E_T0_MS=$(now_ms)
  create_pods "$f"
  wait_bind_success policies 2 60 "$t"
  joined=$(pod_gpus pol-binpack)
  [[ $joined == "$shared" ]] || fail "binpack put its pod on $joined, not the used GPU $shared"

  policy_pod pol-mutex "binpack,mutex" >"$f"
  E2E_T0_MS=$(now_ms)
  create_pods "$f"
  wait_bind_success policies 3 60 "$t"
  solo=$(pod_gpus pol-mutex)
  [[ -n $solo && $solo != "$shared" ]] ||
    fail "binpack,mutex took $solo, which holds pol-shared and pol-binpack"
  log "binpack joined $shared; binpack,mutex took the idle $solo"

  out=$(policy_pod pol-bad "binpack,spread" | k create -f - 2>&1) &&
    fail "the webhook admitted hami.io/gpu-scheduler-policy=binpack,spread"
  grep -q 'hami.io/gpu-scheduler-policy.*both binpack and spread' <<<"$out" ||
    fail "refusal of binpack,spread does not name the annotation and the conflict: $out"

  # Every GPU of the node now holds a vGPU: a mutex pod must wait, saying why.
  policy_pod pol-waiter mutex >"$f"
  create_pods "$f"
  wait_until 30 "FailedScheduling for pol-waiter" has_failed_scheduling pol-waiter ||
    fail "no FailedScheduling for a mutex pod with no idle GPU (node $(k get pod pol-waiter -o jsonpath='{.spec.nodeName}'))"
  msg=$(k get events --field-selector involvedObject.name=pol-waiter,reason=FailedScheduling \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  grep -q ExclusiveDeviceAllocateConflict <<<"$msg" ||
    fail "FailedScheduling for the mutex pod does not say ExclusiveDeviceAllocateConflict: $msg"
  [[ -z $(k get pod pol-waiter -o jsonpath='{.spec.nodeName}') ]] ||
    fail "the mutex pod was bound although no GPU was idle"

  # Empty the shared GPU: the waiting mutex pod lands on it, the one that just became idle.
  k delete pod pol-shared pol-binpack --grace-period=0 --force >/dev/null 2>&1
  freed_ms=$(now_ms)
  wait_until 30 "pol-waiter bound" bind_phase_is pol-waiter success ||
    fail "the mutex pod was not placed within 30 s of its GPU becoming idle"
  freed_ms=$(($(now_ms) - freed_ms))
  waiter=$(pod_gpus pol-waiter)
  [[ $waiter == "$shared" ]] || fail "the mutex pod took $waiter, not the freed $shared"
  log "mutex waited (ExclusiveDeviceAllocateConflict), then took the freed $waiter ${freed_ms} ms after the delete"
  delete_pods policies
}
