#!/usr/bin/env bash
# Installs, idempotently, every Debian package that baton's build, tests, benchmarks
# and demo need. Safe to run again: it only calls apt when something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  librocksdb-dev libcxxopts-dev libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin libabsl-dev
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libxxhash-dev libzstd-dev libhwloc-dev
  prometheus-cpp-dev libcpp-httplib-dev
  nftables iproute2 iperf3 procps util-linux prometheus
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
