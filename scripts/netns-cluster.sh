#!/usr/bin/env bash
# A local multi-node cluster: N network namespaces on a bridge, one baton-agent per
# namespace bound to its own address, the coordinator in the root namespace.
#   scripts/netns-cluster.sh up N [GPUS]   start (prints the environment to use it)
#   scripts/netns-cluster.sh down          stop everything and remove what `up` made
#   scripts/netns-cluster.sh env           print the environment again
#   scripts/netns-cluster.sh restart-coordinator [SIG]   SIG (default KILL) it, start it
#                                          again on the same address and data dir
#   scripts/netns-cluster.sh stop-coordinator [SIG] | start-coordinator   the two halves
#                                          (an outage as long as you wait in between)
#   scripts/netns-cluster.sh restart-agent I [SIG]       same for node I's agent (its jobs
#                                          keep running and are re-adopted)
#   scripts/netns-cluster.sh kill-agent I [SIG]          SIG node I's agent, no restart
#                                          (its jobs run on, orphaned; `down` kills them)
#   scripts/netns-cluster.sh partition I | heal I        cut node I off the bridge / back
# HA (docs/ha.md): with BATON_NETNS_HA=R (1-9) the coordinator runs as R replicas, each in
# a namespace of its own (<name>-c<K>, address <subnet>.20K, port 7070), on a three-member
# etcd, each member in a namespace of its own too (<name>-e<K>, <subnet>.21K, data on
# /dev/shm), TLS everywhere under an etcd CA of its own (state dir etcd/); clients and
# agents get every replica's address. BATON_NETNS_HA_TTL sets --ha-ttl (default 5s).
# `restart-coordinator` and its halves are then refused; instead:
#   scripts/netns-cluster.sh stop-replica K [SIG] | start-replica K    replica K
#   scripts/netns-cluster.sh stop-etcd K [SIG] | start-etcd K          etcd member K
#   scripts/netns-cluster.sh cut-etcd K | heal-etcd K    replica K alone loses etcd (nft in
#                                          its namespace drops etcd's port) / gets it back
# Settings (environment): BATON_NETNS_NAME (default baton) prefixes every namespace,
# interface and the state dir /tmp/<name>-netns; BATON_NETNS_SUBNET (default 10.77.0)
# is the /24 used; BATON_BIN (default build/bin) holds the binaries; BATON_COORDINATOR_ARGS
# and BATON_AGENT_ARGS add flags (e.g. --policy FILE); BATON_NETNS_LEAF_SIZE=K labels the
# nodes as a switch tree of leaves of K consecutive nodes (topology.baton.io/leaf=leaf-1…,
# docs/topology.md) and each node baton.io/node=n<i>; BATON_NETNS_KEEP_LOGS=DIR makes
# `down` copy the daemons' logs there first. Two clusters with
# different names and subnets can run side by side. Needs root (ip netns, bridges).
# Security as on a real cluster: a private munged (scripts/munged.sh) proves the CLI's
# users, and every channel is TLS under a CA made for the cluster (scripts/certs.sh): the
# coordinator's certificate names its bridge address, each agent's its node.
# Namespaces share the filesystem, so a checkpoint dir under /tmp is "shared storage".
# They also share the cgroup tree: each cluster's agents keep their attempts under
# <name>/n<i>, so that clusters side by side never touch each other's jobs.
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=${BATON_NETNS_NAME:-baton}
SUBNET=${BATON_NETNS_SUBNET:-10.77.0}
BIN=$(cd "${BATON_BIN:-build/bin}" && pwd)
STATE=/tmp/$NAME-netns
BRIDGE=${NAME:0:8}br0
COORD_ADDR=$SUBNET.1

ns() { echo "$NAME-n$1"; }
HA=${BATON_NETNS_HA:-0}
case "$HA" in [0-9]) ;; *) echo "netns-cluster: BATON_NETNS_HA must be 0-9" >&2; exit 2 ;; esac
replica_addr() { echo "$SUBNET.$((200 + $1))"; }
etcd_addr() { echo "$SUBNET.$((210 + $1))"; }
ETCD_MEMBERS=3

# A namespace NS on the bridge at ADDR through veth pair VETH (host end; the other end
# becomes eth0 inside).
add_ns() {
  local ns=$1 addr=$2 veth=$3
  ip netns add "$ns"
  ip link add "$veth" type veth peer name "${veth}p"
  ip link set "$veth" master "$BRIDGE" up
  ip link set "${veth}p" netns "$ns"
  nsenter --net="/var/run/netns/$ns" sh -c "
    ip link set ${veth}p name eth0 && ip addr add $addr/24 dev eth0 &&
    ip link set eth0 up && ip link set lo up && ip route add default via $COORD_ADDR"
}

etcd_endpoints() {
  local out="" k
  for k in $(seq 1 $ETCD_MEMBERS); do out="$out,https://$(etcd_addr "$k"):2379"; done
  echo "${out#,}"
}

# etcd member K in its namespace: clients and peers on TLS from the etcd CA.
start_etcd() {
  local k=$1 addr peers="" j
  addr=$(etcd_addr "$k")
  for j in $(seq 1 $ETCD_MEMBERS); do peers="$peers,e$j=https://$(etcd_addr "$j"):2380"; done
  local pki=$STATE/etcd
  nsenter --net="/var/run/netns/$NAME-e$k" etcd --name "e$k" --data-dir "/dev/shm/$NAME-etcd-e$k" \
    --listen-client-urls "https://$addr:2379" --advertise-client-urls "https://$addr:2379" \
    --listen-peer-urls "https://$addr:2380" --initial-advertise-peer-urls "https://$addr:2380" \
    --initial-cluster "${peers#,}" --initial-cluster-state new --initial-cluster-token "$NAME" \
    --client-cert-auth --trusted-ca-file "$pki/ca.crt" --cert-file "$pki/etcd-e$k.crt" \
    --key-file "$pki/etcd-e$k.key" --peer-client-cert-auth --peer-trusted-ca-file "$pki/ca.crt" \
    --peer-cert-file "$pki/etcd-e$k.crt" --peer-key-file "$pki/etcd-e$k.key" \
    --heartbeat-interval 100 --election-timeout 1000 --auto-compaction-mode revision \
    --auto-compaction-retention 1000 --log-level warn >>"$STATE/etcd-e$k.log" 2>&1 &
  echo $! >"$STATE/etcd-e$k.pid"
}

etcd_healthy() {
  ETCDCTL_API=3 etcdctl --endpoints "$(etcd_endpoints)" --cacert "$STATE/etcd/ca.crt" \
    --cert "$STATE/etcd/coordinator.crt" --key "$STATE/etcd/coordinator.key" \
    --command-timeout 2s endpoint health >/dev/null 2>&1
}

# Replica K in its namespace (data dir c<K>, log c<K>.log, ready file c<K>.addr).
start_replica() {
  local k=$1 addr
  addr=$(replica_addr "$k")
  rm -f "$STATE/c$k.addr"
  nsenter --net="/var/run/netns/$NAME-c$k" "$BIN/baton-coordinator" --listen "$addr:7070" \
    --data-dir "$STATE/c$k" --ready-file "$STATE/c$k.addr" --heartbeat 500ms --lease 4000ms \
    --lost-margin 2000ms --tls-ca "$STATE/tls/ca.crt" --tls-cert "$STATE/tls/coordinator.crt" \
    --tls-key "$STATE/tls/coordinator.key" --munge-socket "$STATE/munge/munge.socket" \
    --ha-etcd "$(etcd_endpoints)" --ha-name "c$k" --ha-ttl "${BATON_NETNS_HA_TTL:-5s}" \
    --ha-etcd-ca "$STATE/etcd/ca.crt" --ha-etcd-cert "$STATE/etcd/coordinator.crt" \
    --ha-etcd-key "$STATE/etcd/coordinator.key" \
    ${BATON_COORDINATOR_ARGS:-} >>"$STATE/c$k.log" 2>&1 &
  echo $! >"$STATE/c$k.pid"
  for _ in $(seq 600); do [ -s "$STATE/c$k.addr" ] && return 0; sleep 0.05; done
  echo "netns-cluster: replica c$k did not start; the end of its log:" >&2
  tail -n 15 "$STATE/c$k.log" >&2
  exit 1
}

# The replicas, etcd and their namespaces (HA); coordinator.addr lists every replica.
start_ha() {
  scripts/certs.sh "$STATE/etcd" ca >/dev/null
  scripts/certs.sh "$STATE/etcd" coordinator >/dev/null
  local k list=""
  for k in $(seq 1 $ETCD_MEMBERS); do
    scripts/certs.sh "$STATE/etcd" etcd "e$k" "IP:$(etcd_addr "$k")" >/dev/null
    add_ns "$NAME-e$k" "$(etcd_addr "$k")" "${NAME:0:6}e$k"
  done
  for k in $(seq 1 "$HA"); do add_ns "$NAME-c$k" "$(replica_addr "$k")" "${NAME:0:6}c$k"; done
  for k in $(seq 1 $ETCD_MEMBERS); do rm -rf "/dev/shm/$NAME-etcd-e$k"; start_etcd "$k"; done
  for _ in $(seq 100); do etcd_healthy && break; sleep 0.2; done
  etcd_healthy || { echo "netns-cluster: etcd did not come up; see $STATE/etcd-e*.log" >&2; exit 1; }
  for k in $(seq 1 "$HA"); do
    start_replica "$k"
    list="$list,$(replica_addr "$k"):7070"
  done
  echo "${list#,}" >"$STATE/coordinator.addr"
}

no_ha_verb() {
  [ "$(cat "$STATE/ha" 2>/dev/null || echo 0)" = 0 ] && return 0
  echo "netns-cluster: $1 is for a single coordinator; with replicas use stop-replica K," \
    "start-replica K" >&2
  exit 2
}

start_cluster() {
  local n=$1 gpus=${2:-2}
  [ -e "$STATE/up" ] && { echo "netns-cluster: $NAME is already up (down first)" >&2; exit 1; }
  mkdir -p "$STATE"
  chmod 0711 "$STATE"  # users reach the CA and munged's socket; secrets stay 0600/0700
  mkdir -m 1777 "$STATE/shared"  # where any user's job may write (checkpoint dirs)
  echo "$n" >"$STATE/nodes"
  scripts/munged.sh start "$STATE/munge" >/dev/null
  scripts/certs.sh "$STATE/tls" ca >/dev/null
  local sans="IP:$COORD_ADDR" k
  for k in $(seq 1 "$HA"); do sans="$sans IP:$(replica_addr "$k")"; done
  # shellcheck disable=SC2086  # one SAN per word
  scripts/certs.sh "$STATE/tls" coordinator $sans >/dev/null
  for i in $(seq 1 "$n"); do scripts/certs.sh "$STATE/tls" node "n$i" "IP:$SUBNET.$((10 + i))" >/dev/null; done
  chmod 0755 "$STATE/tls"
  ip link add "$BRIDGE" type bridge
  ip addr add "$COORD_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for i in $(seq 1 "$n"); do
    ip netns add "$(ns "$i")"
    ip link add "${NAME:0:6}h$i" type veth peer name "${NAME:0:6}p$i"
    ip link set "${NAME:0:6}h$i" master "$BRIDGE" up
    ip link set "${NAME:0:6}p$i" netns "$(ns "$i")"
    nsenter --net="/var/run/netns/$(ns "$i")" sh -c "
      ip link set ${NAME:0:6}p$i name eth0 && ip addr add $SUBNET.$((10 + i))/24 dev eth0 &&
      ip link set eth0 up && ip link set lo up && ip route add default via $COORD_ADDR"
  done
  touch "$STATE/up"
  echo "$gpus" >"$STATE/gpus"
  echo "$HA" >"$STATE/ha"

  if [ "$HA" -gt 0 ]; then start_ha; else start_coordinator "$COORD_ADDR:0"; fi
  local coord
  coord=$(cat "$STATE/coordinator.addr")
  for i in $(seq 1 "$n"); do start_agent "$i"; done
  for _ in $(seq 200); do
    ready=$(client_env "$BIN/baton" nodes --json 2>/dev/null | grep -c NODE_STATE_READY || true)
    [ "$ready" = "$n" ] && break
    sleep 0.1
  done
  [ "$ready" = "$n" ] || { echo "netns-cluster: only $ready of $n agents registered" >&2; exit 1; }
  print_env
}

# The coordinator on LISTEN (host:port; port 0 picks one), its address in coordinator.addr.
start_coordinator() {
  rm -f "$STATE/coordinator.addr"
  "$BIN/baton-coordinator" --listen "$1" --data-dir "$STATE/coordinator" \
    --ready-file "$STATE/coordinator.addr" --heartbeat 500ms --lease 4000ms \
    --lost-margin 2000ms --tls-ca "$STATE/tls/ca.crt" --tls-cert "$STATE/tls/coordinator.crt" \
    --tls-key "$STATE/tls/coordinator.key" --munge-socket "$STATE/munge/munge.socket" \
    ${BATON_COORDINATOR_ARGS:-} >>"$STATE/coordinator.log" 2>&1 &
  echo $! >"$STATE/coordinator.pid"
  # Up to 30 s: a restart under a loaded CI machine (ctest -j2) has taken over 10.
  for _ in $(seq 600); do [ -s "$STATE/coordinator.addr" ] && break; sleep 0.05; done
  [ -s "$STATE/coordinator.addr" ] || {
    echo "netns-cluster: coordinator did not start; the end of its log:" >&2
    tail -n 15 "$STATE/coordinator.log" >&2
    exit 1
  }
}

# Node I's agent, inside its namespace; its log is appended to (restarts keep the story).
start_agent() {
  local i=$1 labels=()
  if [ "${BATON_NETNS_LEAF_SIZE:-0}" -gt 0 ]; then
    labels=(--label "topology.baton.io/leaf=leaf-$(((i - 1) / BATON_NETNS_LEAF_SIZE + 1))"
      --label "baton.io/node=n$i")
  fi
  nsenter --net="/var/run/netns/$(ns "$i")" "$BIN/baton-agent" --name "n$i" \
    --coordinator "$(cat "$STATE/coordinator.addr")" --listen "$SUBNET.$((10 + i)):7071" \
    --data-dir "$STATE/n$i" --nic eth0 --fake-gpus "$(cat "$STATE/gpus")" \
    --fake-gpu-model H200 --cgroup-parent "$NAME/n$i" --tls-ca "$STATE/tls/ca.crt" \
    --tls-cert "$STATE/tls/node-n$i.crt" --tls-key "$STATE/tls/node-n$i.key" \
    ${labels[@]+"${labels[@]}"} ${BATON_AGENT_ARGS:-} >>"$STATE/n$i.log" 2>&1 &
  echo $! >"$STATE/n$i.pid"
}

# Sends SIG to the process in pid file F and waits until it is gone.
signal_and_wait() {
  local f=$1 sig=$2 pid
  pid=$(cat "$f")
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
}

restart_coordinator() {
  local addr
  addr=$(cat "$STATE/coordinator.addr")
  signal_and_wait "$STATE/coordinator.pid" "${1:-KILL}"
  start_coordinator "$addr"
}

kill_agent() {
  signal_and_wait "$STATE/n${1:?usage: netns-cluster.sh kill-agent I [SIG]}.pid" "${2:-KILL}"
}

restart_agent() {
  local i=${1:?usage: netns-cluster.sh restart-agent I [SIG]}
  signal_and_wait "$STATE/n$i.pid" "${2:-KILL}"
  start_agent "$i"
}

# Runs a command with the environment a client of this cluster needs.
client_env() {
  BATON_COORDINATOR=$(cat "$STATE/coordinator.addr") BATON_CA=$STATE/tls/ca.crt \
    BATON_MUNGE_SOCKET=$STATE/munge/munge.socket "$@"
}

print_env() {
  echo "export BATON_COORDINATOR=$(cat "$STATE/coordinator.addr")"
  echo "export BATON_CA=$STATE/tls/ca.crt"
  echo "export BATON_MUNGE_SOCKET=$STATE/munge/munge.socket"
  echo "# state, logs and agent data: $STATE (any user may use the CLI with these)"
}

stop_pid() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

stop_cluster() {
  local n=0
  [ -f "$STATE/nodes" ] && n=$(cat "$STATE/nodes")
  # Without its record (a teardown cut short), the cluster's namespaces still say how many.
  local listed
  listed=$(ip netns list 2>/dev/null | awk '{print $1}' | sed -n "s/^$NAME-n\([0-9][0-9]*\)$/\1/p" |
    sort -n | tail -n 1)
  [ -n "$listed" ] && [ "$listed" -gt "$n" ] && n=$listed
  for i in $(seq 1 "$n"); do stop_pid "$STATE/n$i.pid"; done
  # What outlived its agent (killed, not restarted): every process left in the agents'
  # cgroups, in every hierarchy.
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -d "$h$NAME" ] || continue
    find "$h$NAME" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  done
  stop_pid "$STATE/coordinator.pid"
  local k
  for k in 1 2 3 4 5 6 7 8 9; do
    stop_pid "$STATE/c$k.pid"
    ip netns del "$NAME-c$k" 2>/dev/null || true
    ip link del "${NAME:0:6}c$k" 2>/dev/null || true
  done
  for k in $(seq 1 $ETCD_MEMBERS); do
    stop_pid "$STATE/etcd-e$k.pid"
    ip netns del "$NAME-e$k" 2>/dev/null || true
    ip link del "${NAME:0:6}e$k" 2>/dev/null || true
    rm -rf "/dev/shm/$NAME-etcd-e$k"
  done
  [ -d "$STATE/munge" ] && scripts/munged.sh stop "$STATE/munge"
  for i in $(seq 1 "$n"); do
    ip netns del "$(ns "$i")" 2>/dev/null || true
    ip link del "${NAME:0:6}h$i" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  # The agents' parent cgroups (empty once every attempt is gone), in every hierarchy.
  for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
    [ -d "$h$NAME" ] && find "$h$NAME" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  if [ -n "${BATON_NETNS_KEEP_LOGS:-}" ] && [ -d "$STATE" ]; then
    mkdir -p "$BATON_NETNS_KEEP_LOGS" && cp "$STATE"/*.log "$BATON_NETNS_KEEP_LOGS"/ 2>/dev/null || true
  fi
  rm -rf "$STATE"
}

case "${1:-}" in
  up) shift; start_cluster "${1:?usage: netns-cluster.sh up N [GPUS]}" "${2:-2}" ;;
  down) stop_cluster ;;
  env) print_env ;;
  restart-coordinator) no_ha_verb "$1"; restart_coordinator "${2:-KILL}" ;;
  stop-coordinator) no_ha_verb "$1"; signal_and_wait "$STATE/coordinator.pid" "${2:-KILL}" ;;
  start-coordinator) no_ha_verb "$1"; start_coordinator "$(cat "$STATE/coordinator.addr")" ;;
  stop-replica) signal_and_wait "$STATE/c${2:?usage: netns-cluster.sh stop-replica K [SIG]}.pid" "${3:-KILL}" ;;
  start-replica) start_replica "${2:?usage: netns-cluster.sh start-replica K}" ;;
  stop-etcd) signal_and_wait "$STATE/etcd-e${2:?usage: netns-cluster.sh stop-etcd K [SIG]}.pid" "${3:-KILL}" ;;
  start-etcd) start_etcd "${2:?usage: netns-cluster.sh start-etcd K}" ;;
  cut-etcd)
    echo "table inet baton_cut { chain out { type filter hook output priority 0; tcp dport 2379 drop; }; }" |
      nsenter --net="/var/run/netns/$NAME-c${2:?usage: netns-cluster.sh cut-etcd K}" nft -f - ;;
  heal-etcd) nsenter --net="/var/run/netns/$NAME-c${2:?usage: netns-cluster.sh heal-etcd K}" \
    nft delete table inet baton_cut ;;
  restart-agent) restart_agent "${2:-}" "${3:-KILL}" ;;
  kill-agent) kill_agent "${2:-}" "${3:-KILL}" ;;
  partition) ip link set "${NAME:0:6}h${2:?usage: netns-cluster.sh partition I}" down ;;
  heal) ip link set "${NAME:0:6}h${2:?usage: netns-cluster.sh heal I}" up ;;
  *) echo "usage: $0 up N [GPUS] | down | env | restart-coordinator [SIG] |" \
       "stop-coordinator [SIG] | start-coordinator |" \
       "restart-agent I [SIG] | kill-agent I [SIG] | partition I | heal I |" \
       "stop-replica K [SIG] | start-replica K | stop-etcd K [SIG] | start-etcd K |" \
       "cut-etcd K | heal-etcd K" >&2; exit 2 ;;
esac
