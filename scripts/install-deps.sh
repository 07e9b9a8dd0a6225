#!/usr/bin/env bash
# Installs every Debian 12 package the build and the tests need. Idempotent:
# silent and offline when everything is already there; otherwise one
# `apt-get update`, then one `apt-get install` of what is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git python3 binutils procps
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libcli11-dev
  libcurl4-openssl-dev libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format clang-tidy
  tmux  # a pseudo-terminal for the tests of `vgpu top`'s live view (tests/cli/top_tty_test.cpp)
  # promtool, which the metrics tests run on every exporter's page. Debian ships it only in the
  # server's package; on a host booted with systemd that also enables the server's unit
  # (`systemctl disable --now prometheus` if it is not wanted).
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

if [[ ! -f /usr/local/cuda/include/cuda.h ]]; then
  echo "install-deps: warning: /usr/local/cuda/include/cuda.h not found; set CUDA_HOME to the CUDA 13 toolkit" >&2
fi
