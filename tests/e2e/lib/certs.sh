# Generates, with openssl, the CA and every certificate and kubeconfig of one run.
# Identities: the admin (system:masters), kube-scheduler, kube-controller-manager and kubelets use
# the built-in RBAC roles; our hand-started scheduler and device plugin authenticate as their
# ServiceAccounts' user names, so the ClusterRoles in deploy/rbac are what is actually tested (the
# chart's pods use real ServiceAccount tokens and the chart's own RBAC).

E2E_SCHEDULER_USER=system:serviceaccount:kube-system:hami-scheduler
E2E_DEVICE_PLUGIN_USER=system:serviceaccount:kube-system:hami-device-plugin

# issue_cert <name> <CN> <O or ""> <client|server> [SAN list]
issue_cert() {
  local name=$1 cn=$2 org=$3 kind=$4 sans=${5:-}
  local subj="/CN=$cn"
  [[ -n $org ]] && subj="/O=$org$subj"
  local ext=$E2E_CERTS/$name.ext
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    if [[ $kind == server ]]; then
      echo "extendedKeyUsage=serverAuth,clientAuth"
      echo "subjectAltName=$sans"
    else
      echo "extendedKeyUsage=clientAuth"
    fi
  } >"$ext"
  openssl req -new -newkey rsa:2048 -nodes -keyout "$E2E_CERTS/$name.key" -subj "$subj" \
    -out "$E2E_CERTS/$name.csr" 2>/dev/null
  openssl x509 -req -in "$E2E_CERTS/$name.csr" -CA "$E2E_CERTS/ca.crt" -CAkey "$E2E_CERTS/ca.key" \
    -CAcreateserial -days 2 -sha256 -extfile "$ext" -out "$E2E_CERTS/$name.crt" 2>/dev/null
}

# write_kubeconfig <name> <user-cert-name> [token]: a token, when given, is used instead of the cert.
write_kubeconfig() {
  local name=$1 cert=$2 token=${3:-}
  local dir=$E2E_WORK/kubeconfig
  mkdir -p "$dir"
  {
    cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $E2E_SERVER
    certificate-authority: $E2E_CERTS/ca.crt
contexts:
- name: e2e
  context: {cluster: e2e, user: $name}
current-context: e2e
users:
- name: $name
  user:
EOF
    if [[ -n $token ]]; then
      echo "    token: $token"
    else
      echo "    client-certificate: $E2E_CERTS/$cert.crt"
      echo "    client-key: $E2E_CERTS/$cert.key"
    fi
  } >"$dir/$name.kubeconfig"
}

generate_certs() {
  mkdir -p "$E2E_CERTS"
  log "generating certificates in $E2E_CERTS"
  openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$E2E_CERTS/ca.key" -days 2 \
    -subj "/CN=vgpu-e2e-ca" -out "$E2E_CERTS/ca.crt" 2>/dev/null
  openssl genrsa -out "$E2E_CERTS/sa.key" 2048 2>/dev/null
  openssl rsa -in "$E2E_CERTS/sa.key" -pubout -out "$E2E_CERTS/sa.pub" 2>/dev/null

  local ip="IP:127.0.0.1,DNS:localhost"
  issue_cert apiserver kube-apiserver "" server \
    "$ip,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  issue_cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client
  issue_cert admin e2e-admin system:masters client
  issue_cert kube-scheduler system:kube-scheduler "" client
  issue_cert kube-controller-manager system:kube-controller-manager "" client
  issue_cert webhook hami-scheduler "" server \
    "$ip,DNS:hami-scheduler.kube-system.svc"
  issue_cert hami-scheduler "$E2E_SCHEDULER_USER" system:serviceaccounts client
  issue_cert hami-device-plugin "$E2E_DEVICE_PLUGIN_USER" system:serviceaccounts client

  # Static tokens as well, for clients that speak bearer tokens rather than client certificates.
  E2E_SCHEDULER_TOKEN=$(openssl rand -hex 16)
  E2E_DEVICE_PLUGIN_TOKEN=$(openssl rand -hex 16)
  cat >"$E2E_CERTS/tokens.csv" <<EOF
$E2E_SCHEDULER_TOKEN,$E2E_SCHEDULER_USER,hami-scheduler-uid,"system:serviceaccounts,system:serviceaccounts:kube-system"
$E2E_DEVICE_PLUGIN_TOKEN,$E2E_DEVICE_PLUGIN_USER,hami-device-plugin-uid,"system:serviceaccounts,system:serviceaccounts:kube-system"
EOF

  write_kubeconfig admin admin
  write_kubeconfig kube-scheduler kube-scheduler
  write_kubeconfig kube-controller-manager kube-controller-manager
  write_kubeconfig hami-scheduler hami-scheduler
  write_kubeconfig hami-device-plugin hami-device-plugin
  write_kubeconfig hami-scheduler-token "" "$E2E_SCHEDULER_TOKEN"
  write_kubeconfig hami-device-plugin-token "" "$E2E_DEVICE_PLUGIN_TOKEN"
}

# Kubelet identity for one node (the Node authorizer needs CN system:node:<name>).
generate_node_cert() {
  local node=$1
  issue_cert "kubelet-$node" "system:node:$node" system:nodes client
  issue_cert "kubelet-serving-$node" "$node" "" server "IP:127.0.0.1,DNS:$node"
  write_kubeconfig "kubelet-$node" "kubelet-$node"
}
