#!/usr/bin/env bash
# Installs, idempotently, every Debian package that baton's build, tests, benchmarks
# and demo need. Safe to run again: it only calls apt when something is missing.
set -euo pipefail

# Each one is used: libraries by CMake, tools by scripts/, tests/ or bench/ (iperf3, fio,
# prometheus, etcd and socat for the HA tests), procps for the units' /bin/kill (package_test verifies them), dpkg-dev for
# cpack's dpkg-shlibdeps, clang and libclang-rt for the fuzz and sanitizer builds,
# chromium-headless-shell for the web dashboard's browser tests.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libcxxopts-dev libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin libabsl-dev
  libyaml-cpp-dev nlohmann-json3-dev libspdlog-dev
  libxxhash-dev libhwloc-dev libjemalloc-dev
  prometheus-cpp-dev libcpp-httplib-dev
  nftables iproute2 iperf3 fio procps util-linux prometheus
  munge libmunge-dev libssl-dev openssl
  etcd-server etcd-client socat
  clang libclang-rt-14-dev
  systemd dpkg-dev help2man
  python3-dev python3-torch python3-numpy pybind11-dev python3-pytest
  chromium-headless-shell
)

# Users the tests and the demo act as (never created by baton's packages): alice is in
# tenant vision, bob in serving, mallory in none (see tests/util/security.h).
TEST_USERS=(baton-alice baton-bob baton-mallory)

make_test_users() {
  [ "$(id -u)" -eq 0 ] || { echo "setup: not root: test users not created"; return 0; }
  local u made=()
  for u in "${TEST_USERS[@]}"; do
    if ! getent passwd "$u" >/dev/null; then
      useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$u"
      made+=("$u")
    fi
  done
  [ ${#made[@]} -eq 0 ] || echo "setup: created test users ${made[*]}"
}

# The browser tests (label browser, tests/browser/) drive Debian's Chromium with npm's
# playwright-core, pinned by tests/browser/package-lock.json. Without node/npm or the
# registry, those tests skip and say why.
setup_browser() {
  local dir
  dir="$(dirname "$0")/../tests/browser"
  [ -d "$dir/node_modules/playwright-core" ] && return 0
  if ! command -v npm >/dev/null; then
    echo "setup: no npm: the browser tests will skip"
    return 0
  fi
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "setup: npm ci in tests/browser failed: the browser tests will skip"
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  make_test_users
  setup_browser
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the system munged on install; baton's tests and demo run private ones.
make_test_users
setup_browser
echo "setup: done"
