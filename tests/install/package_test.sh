#!/usr/bin/env bash
# Builds the Debian packages of this build (cpack), checks their names, dependencies,
# contents and maintainer scripts, extracts them (dpkg-deb -x) into a temporary root —
# never installing into the host — verifies the units there with systemd-analyze, starts
# the coordinator and an agent from the extracted tree with their units' ExecStart lines
# and packaged config files (data dirs and addresses moved into the temporary directory
# by flags, which win over the files), and runs a job.
# usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/baton-package.XXXXXX)
chmod 0711 "$work"
PIDS=()
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  "$src/scripts/munged.sh" stop "$work/munge" >/dev/null 2>&1
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "package_test: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$work/pkgs") >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"; fail "cpack failed"; }
deb() { ls "$work/pkgs/$1"_*.deb 2>/dev/null | head -1; }
for p in baton-coordinator baton-agent baton-client libbaton-checkpoint-dev; do
  [ -n "$(deb "$p")" ] || fail "no package $p"
done
depends_on() {  # package, dependency
  local d
  d=$(dpkg-deb -f "$(deb "$1")" Depends)
  case ", $d," in *", $2"[\ ,]*) ;; *) fail "$1 does not depend on $2: $d" ;; esac
}
depends_on baton-coordinator munge
depends_on baton-coordinator libc6
depends_on baton-coordinator libgrpc++1.51
depends_on baton-agent nftables
depends_on baton-agent iproute2
depends_on baton-agent openmpi-bin
depends_on baton-agent libhwloc15  # dpkg-shlibdeps, from the topology (hwloc)
depends_on libbaton-checkpoint-dev libabsl-dev
has() {  # package, path
  local c
  c=$(dpkg-deb -c "$(deb "$1")")
  case "$c" in *" ./$2"*) ;; *) fail "$1 does not hold /$2" ;; esac
}
has baton-coordinator usr/bin/baton-coordinator
has baton-coordinator usr/lib/systemd/system/baton-coordinator.service
has baton-coordinator etc/baton/coordinator.yaml
has baton-agent etc/baton/agent.yaml
has baton-agent usr/bin/baton-agent
has baton-agent usr/bin/baton-exec
has baton-agent usr/bin/baton-keeper
has baton-agent usr/lib/systemd/system/baton-agent.service
has baton-client usr/bin/baton
has libbaton-checkpoint-dev usr/include/baton/checkpoint/checkpoint.h
has libbaton-checkpoint-dev usr/lib/pkgconfig/baton-checkpoint.pc
has libbaton-checkpoint-dev usr/lib/cmake/baton/batonConfig.cmake
if [ -d "$build/python/baton" ]; then
  has libbaton-checkpoint-dev usr/lib/python3/dist-packages/baton/__init__.py
fi
dpkg-deb -e "$(deb baton-coordinator)" "$work/control"
grep -qx /etc/baton/coordinator.yaml "$work/control/conffiles" || fail "no conffiles"
grep -q 'useradd --system' "$work/control/postinst" || fail "postinst makes no baton user"
sh -n "$work/control/postinst" || fail "postinst does not parse"

root=$work/root
for p in baton-coordinator baton-agent baton-client libbaton-checkpoint-dev; do
  dpkg-deb -x "$(deb "$p")" "$root"
done
# Verified as systemd reads them, with the extracted binaries in ExecStart's place.
mkdir -p "$work/units"
for u in baton-coordinator baton-agent; do
  sed "s#^ExecStart=/usr/bin/#ExecStart=$root/usr/bin/#" "$root/usr/lib/systemd/system/$u.service" \
    >"$work/units/$u.service"
  out=$(cd "$work/units" && systemd-analyze verify "./$u.service" 2>&1) ||
    fail "systemd-analyze verify $u: $out"
  [ -z "$out" ] || fail "systemd-analyze verify $u warns: $out"
done
version=$("$root/usr/bin/baton" --version)
echo "package_test: packages of $version verified"

# The daemons as their units start them, from the extracted tree.
execstart() {  # unit -> its command line, /usr/bin and /etc moved into the root
  sed -n 's/^ExecStart=//p' "$root/usr/lib/systemd/system/$1.service" |
    sed -e "s# /usr/bin/# $root/usr/bin/#; s#^/usr/bin/#$root/usr/bin/#; s# /etc/# $root/etc/#g"
}
read -r -a coordinator <<<"$(execstart baton-coordinator)"
read -r -a agent <<<"$(execstart baton-agent)"
[ "${coordinator[0]}" = "$root/usr/bin/baton-coordinator" ] || fail "coordinator ExecStart: ${coordinator[*]}"
[ "${agent[0]}" = "$root/usr/bin/baton-agent" ] || fail "agent ExecStart: ${agent[*]}"
[ "${coordinator[2]}" = "$root/etc/baton/coordinator.yaml" ] || fail "coordinator config: ${coordinator[*]}"
"${coordinator[@]}" --print-config | grep -qx 'listen: 0.0.0.0:7070' ||
  fail "the packaged coordinator.yaml is not read"
mkdir -p "$work/state/coordinator" "$work/state/agent"
"$src/scripts/munged.sh" start "$work/munge" >/dev/null
"$src/scripts/certs.sh" "$work/tls" ca >/dev/null
"$src/scripts/certs.sh" "$work/tls" coordinator >/dev/null
"$src/scripts/certs.sh" "$work/tls" node pkg1 IP:127.0.0.1 >/dev/null
export BATON_CA=$work/tls/ca.crt BATON_MUNGE_SOCKET=$work/munge/munge.socket
"${coordinator[@]}" --listen 127.0.0.1:0 --data-dir "$work/state/coordinator" \
  --ready-file "$work/coordinator.addr" \
  --tls-ca "$BATON_CA" --tls-cert "$work/tls/coordinator.crt" \
  --tls-key "$work/tls/coordinator.key" --munge-socket "$BATON_MUNGE_SOCKET" \
  >"$work/coordinator.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$work/coordinator.addr" ] && break; sleep 0.1; done
[ -s "$work/coordinator.addr" ] || { cat "$work/coordinator.log"; fail "the coordinator did not start"; }
export BATON_COORDINATOR=$(cat "$work/coordinator.addr")
# The unit's cgroup parent is systemd's delegated subtree; here there is no isolation.
"${agent[@]}" --name pkg1 --coordinator "$BATON_COORDINATOR" --listen 127.0.0.1:0 \
  --data-dir "$work/state/agent" \
  --isolation none --tls-ca "$BATON_CA" --tls-cert "$work/tls/node-pkg1.crt" \
  --tls-key "$work/tls/node-pkg1.key" >"$work/agent.log" 2>&1 &
PIDS+=($!)
# A researcher (root may not submit: jobs run as their owners) submits and reads the output.
chmod 0755 "$work/tls" && chmod 0644 "$BATON_CA"
as_user=()
if [ "$(id -u)" = 0 ]; then
  getent passwd baton-alice >/dev/null || fail "no user baton-alice (scripts/setup.sh makes it)"
  as_user=(setpriv --reuid=baton-alice --regid=baton-alice --init-groups --)
fi
id=$(timeout 60 "${as_user[@]}" "$root/usr/bin/baton" submit --parsable -q -- \
  echo hello-from-the-package 2>&1) || fail "submit failed: $id"
for _ in $(seq 300); do
  st=$("${as_user[@]}" "$root/usr/bin/baton" status "$id" --json 2>&1 || true)
  case "$st" in *JOB_STATE_SUCCEEDED*) break ;; *JOB_STATE_FAILED*) break ;; esac
  sleep 0.1
done
case "$st" in *JOB_STATE_SUCCEEDED*) ;; *) cat "$work/agent.log"; fail "job $id: $st" ;; esac
logs=$("${as_user[@]}" "$root/usr/bin/baton" logs "$id" 2>&1) || fail "logs: $logs"
case "$logs" in
  *hello-from-the-package*) ;;
  *) fail "the job's output is missing: $logs" ;;
esac
echo "package_test: ok"
