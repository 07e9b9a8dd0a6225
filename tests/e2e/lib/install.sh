# Installs the Debian packages the harness needs and builds (or reuses) the Kubernetes binaries.

E2E_APT_PACKAGES=(golang-go etcd-server containerd runc containernetworking-plugins rsync jq
  busybox-static openssl curl dpkg-dev gettext-base iproute2 util-linux patch make prometheus)

install_packages() {
  local missing=() p status
  for p in "${E2E_APT_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ $status == installed ]] || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# `apt-get source` needs a deb-src entry; added once, in a file of our own.
ensure_deb_src() {
  local f=/etc/apt/sources.list.d/vgpu-e2e-src.sources
  [[ -f $f ]] && return 0
  log "adding deb-src entry $f"
  cat >"$f" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
}

# kube-controller-manager runs the chart's DaemonSets and Deployments (and creates the
# ServiceAccount tokens their pods mount).
E2E_K8S_TOOLS=(kube-apiserver kube-scheduler kubelet kubectl kube-controller-manager)

# Prints the tools not yet in $E2E_K8S_BIN: a cache from before a tool was added builds only it.
k8s_binaries_missing() {
  local t
  for t in "${E2E_K8S_TOOLS[@]}"; do [[ -x $E2E_K8S_BIN/$t ]] || echo "$t"; done
}

# Builds Kubernetes from Debian's source package the way its debian/rules does (GOPATH symlink,
# CGO off, vendored modules, no network), with the patches of tests/e2e/k8s-patches applied in
# name order (the reflect2 fix for Go >= 1.18; kubelet's device manager serialising Allocate,
# kubernetes #103838). Reused when present.
build_k8s() {
  local missing
  missing=$(k8s_binaries_missing)
  if [[ -z $missing ]]; then
    log "reusing Kubernetes $E2E_K8S_VERSION binaries in $E2E_K8S_BIN"
    return 0
  fi
  ensure_deb_src
  local src=$E2E_CACHE/src
  mkdir -p "$src"
  local tree=$src/k8s-$E2E_K8S_VERSION-$E2E_K8S_PATCHES_ID
  if [[ ! -d $tree ]]; then
    # No .dsc yet is the normal case on a fresh machine: `ls` failing must not end the run.
    local dsc
    dsc=$(compgen -G "$src/kubernetes_*.dsc" | head -n1 || true)
    if [[ -z $dsc ]]; then
      (cd "$src" && apt-get source -qq --download-only kubernetes) ||
        die "apt-get source kubernetes failed (needs the deb-src entry and Debian's mirror)"
      dsc=$(compgen -G "$src/kubernetes_*.dsc" | head -n1 || true)
    fi
    [[ -n $dsc ]] || die "apt-get source kubernetes fetched no .dsc"
    rm -rf "$tree.tmp"
    dpkg-source -x --skip-patches "$dsc" "$tree.tmp" >/dev/null
    local p
    for p in "$E2E_REPO"/tests/e2e/k8s-patches/*.patch; do
      (cd "$tree.tmp" && patch -p1 <"$p" >/dev/null) || die "patch $p does not apply"
    done
    mv "$tree.tmp" "$tree"
  fi
  mkdir -p "$tree/.go/src/k8s.io" "$E2E_CACHE/home"
  [[ -L $tree/.go/src/k8s.io/kubernetes ]] || ln -s ../../.. "$tree/.go/src/k8s.io/kubernetes"
  log "building Kubernetes $E2E_K8S_VERSION:" $missing "(cold: about 15-25 minutes on 2 cores);" \
    "log: $E2E_CACHE/build.log"
  local whats="" t
  for t in $missing; do whats+="cmd/$t "; done
  if ! (cd "$tree" &&
    env GOPATH="$tree/.go" CGO_ENABLED=0 GOFLAGS=-mod=vendor GOPROXY=off \
      GOCACHE="$E2E_CACHE/gocache" HOME="$E2E_CACHE/home" \
      KUBE_GIT_VERSION="$E2E_K8S_VERSION" KUBE_GIT_TREE_STATE=clean KUBE_GIT_MAJOR=1 \
      KUBE_GIT_MINOR="$(echo "$E2E_K8S_VERSION" | cut -d. -f2)" \
      nice -n 10 make WHAT="$whats" >"$E2E_CACHE/build.log" 2>&1); then
    tail -n 40 "$E2E_CACHE/build.log" >&2
    die "Kubernetes build failed (full log: $E2E_CACHE/build.log)"
  fi
  mkdir -p "$E2E_K8S_BIN"
  for t in $missing; do cp "$tree/_output/bin/$t" "$E2E_K8S_BIN/$t"; done
  log "Kubernetes binaries cached in $E2E_K8S_BIN"
}
