#!/usr/bin/env bash
# The main demo: eviction and resume on a local two-node cluster (network namespaces on
# a bridge when run as root, else a loopback cluster), narrated.
#   1. Team vision's train_mlp fills the cluster: 2 nodes x 2 ranks x 2 GPUs, mpi mode.
#   2. Team serving's inference job arrives and needs GPUs: training checkpoints at the
#      step it is on, exits, and yields; inference starts.
#   3. Traffic drops, inference is scaled down; training waits its cooldown, resumes at the
#      committed step, and finishes with the weights of an uninterrupted run.
#   4. A timeline of every state change.
#   5. The event log of the eviction, and where the Prometheus metrics are.
# Secured as a real cluster is: TLS under a CA made for the demo, a private munged that
# proves who runs each CLI call, and a policy that says who may do what. As root, alice
# and bob are the test users baton-alice and baton-bob (scripts/setup.sh makes them);
# otherwise the invoking user plays both.
# BATON_DEMO_KEEP=1 keeps the data dir; BUILD_DIR (default build/) holds the build.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target baton baton-agent baton-coordinator \
  baton-exec train_mlp
BIN=$(cd "$BUILD_DIR/bin" && pwd)
DEMO=$(mktemp -d /tmp/baton-demo.XXXXXX)
chmod 0711 "$DEMO"  # the CLI runs as other users too; secrets stay in 0700/0600 entries
T0=$(date +%s%N)

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
say() { printf '\n\033[1m[%6ss] %s\033[0m\n' "$(secs "$T0" "$(date +%s%N)")" "$*"; }
show() { printf '$ %s\n' "$*" >&2; "$@"; }
state() { alice status "$1" --json | sed -n 's/.*"state":"JOB_STATE_\([A-Z]*\)".*/\1/p'; }
wait_state() {  # job, state, timeout seconds
  for _ in $(seq $(($3 * 10))); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.1; done
  echo "demo: job $1 did not reach $2 (it is $(state "$1"))" >&2; exit 1
}

# Who plays alice (team vision) and bob (team serving), and how their CLI runs.
# Jobs run as their owners: what they execute is staged where those users can read it
# (the checkout may be private), and they write their checkpoints in a shared dir.
mkdir -p "$DEMO/bin" && cp "$BIN/baton" "$BIN/train_mlp" "$DEMO/bin/" && chmod 0755 "$DEMO/bin"
mkdir -m 1777 "$DEMO/shared"
if [ "$(id -u)" = 0 ]; then
  ALICE=baton-alice BOB=baton-bob
  as() { local u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups -- "$DEMO/bin/baton" "$@"; }
else
  ALICE=$(id -un) BOB=$(id -un)
  as() { shift; "$DEMO/bin/baton" "$@"; }
fi
alice() { as "$ALICE" "$@"; }
bob() { as "$BOB" "$@"; }

# Classes evict at once and cool down 10 s in this demo (defaults: minutes). Only team
# serving may run services; root is the admin.
cat >"$DEMO/policy.yaml" <<YAML
admins: [$(id -un)]
classes:
  - {name: inference-critical, value: 1000, service: true, tenants: [serving]}
  - {name: inference, value: 900, service: true, tenants: [serving]}
  - {name: training, value: 300, cooldown: 10s, cooldown_cap: 1m, min_runtime: 0s}
  - {name: experiment, value: 100, cooldown: 10s, min_runtime: 0s}
tenants:
  - {name: vision, members: [$ALICE]}
  - {name: serving, members: [$BOB]}
YAML

CLEANUP=()
cleanup() {
  set +e
  say "shutting down"
  for c in "${CLEANUP[@]}"; do eval "$c"; done
  if [ -n "${BATON_DEMO_KEEP:-}" ]; then echo "data and logs kept in $DEMO"; else rm -rf "$DEMO"; fi
}
trap cleanup EXIT

if [ "$(id -u)" = 0 ] && ip netns add baton-demo-probe 2>/dev/null; then
  ip netns del baton-demo-probe
  say "starting a 2-node cluster: network namespaces on a bridge, the coordinator outside"
  export BATON_NETNS_NAME=bdemo BATON_NETNS_SUBNET=10.76.0 BATON_BIN="$BIN"
  export BATON_COORDINATOR_ARGS="--policy $DEMO/policy.yaml --metrics-listen 10.76.0.1:0
    --metrics-ready-file $DEMO/metrics.addr --web-listen 127.0.0.1:0
    --web-ready-file $DEMO/web.addr"
  CLEANUP+=("scripts/netns-cluster.sh down >/dev/null 2>&1")
  scripts/netns-cluster.sh down >/dev/null 2>&1 || true
  eval "$(scripts/netns-cluster.sh up 2 2 | grep '^export')"
  NODES=2
else
  say "not root: a single-node loopback cluster instead of namespaces"
  scripts/munged.sh start "$DEMO/munge" >/dev/null
  CLEANUP+=("scripts/munged.sh stop $DEMO/munge")
  scripts/certs.sh "$DEMO/tls" ca >/dev/null
  scripts/certs.sh "$DEMO/tls" coordinator >/dev/null
  scripts/certs.sh "$DEMO/tls" node node1 IP:127.0.0.1 >/dev/null
  export BATON_CA=$DEMO/tls/ca.crt BATON_MUNGE_SOCKET=$DEMO/munge/munge.socket
  "$BIN/baton-coordinator" --listen 127.0.0.1:0 --data-dir "$DEMO/coordinator" \
    --ready-file "$DEMO/coordinator.addr" --policy "$DEMO/policy.yaml" \
    --metrics-listen 127.0.0.1:0 --metrics-ready-file "$DEMO/metrics.addr" \
    --web-listen 127.0.0.1:0 --web-ready-file "$DEMO/web.addr" \
    --tls-ca "$BATON_CA" --tls-cert "$DEMO/tls/coordinator.crt" \
    --tls-key "$DEMO/tls/coordinator.key" --munge-socket "$BATON_MUNGE_SOCKET" \
    >"$DEMO/coordinator.log" 2>&1 &
  CLEANUP+=("kill $!; wait $! 2>/dev/null")
  for _ in $(seq 100); do [ -s "$DEMO/coordinator.addr" ] && break; sleep 0.1; done
  export BATON_COORDINATOR=$(cat "$DEMO/coordinator.addr")
  echo "* 60" >"$DEMO/node1.gpu-utilization"  # what the fake GPUs say they are busy
  "$BIN/baton-agent" --name node1 --coordinator "$BATON_COORDINATOR" --data-dir "$DEMO/node1" \
    --fake-gpus 4 --fake-gpu-utilization "$DEMO/node1.gpu-utilization" \
    --isolation none --tls-ca "$BATON_CA" --tls-cert "$DEMO/tls/node-node1.crt" \
    --tls-key "$DEMO/tls/node-node1.key" >"$DEMO/node1.log" 2>&1 &
  CLEANUP=("kill $!; wait $! 2>/dev/null" "${CLEANUP[@]}")
  sleep 1
  NODES=1
fi
say "who is who: every CLI call carries a fresh MUNGE credential of its user, over TLS"
show alice whoami
show bob whoami
show alice nodes
echo "who may do what is the policy's: team vision may not run services (it tries):"
show alice submit --tenant vision --class inference -- true || true

STEPS=150
FLAGS=(--steps $STEPS --save-every 25)
say "the weights an uninterrupted run ends with (mpirun on this machine, 4 ranks)"
mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo \
  -np 4 "$BIN/train_mlp" "${FLAGS[@]}" --checkpoint-dir "$DEMO/reference" >"$DEMO/reference.log" 2>&1
REFERENCE=$(sed -n 's/.*final weights hash //p' "$DEMO/reference.log")
echo "reference hash: $REFERENCE"

say "1. alice (team vision) submits train_mlp: $NODES node(s) x $((4 / NODES)) ranks, all GPUs, mpi mode"
show alice submit -q --tenant vision --name mlp --class training --mode mpi --nodes "$NODES" \
  --ranks-per-node $((4 / NODES)) --gpus $((4 / NODES)) --cpus 1 --grace 20s \
  --checkpoint-dir "$DEMO/shared/ckpt" -- "$DEMO/bin/train_mlp" "${FLAGS[@]}" --step-ms 60 \
  >"$DEMO/train.id"
TRAIN=$(cat "$DEMO/train.id")
wait_state "$TRAIN" RUNNING 30
sleep 3
show alice queue
{ alice logs "$TRAIN" | grep 'step' | tail -n 2; } || true

say "2. bob (team serving) submits an inference service that needs 2 GPUs"
T_SUBMIT=$(date +%s%N)
bob submit -q --tenant serving --name serve --class inference \
  --gpus 2 --cpus 1 -- sh -c 'echo serving; exec sleep 600' >"$DEMO/serve.id"
SERVE=$(cat "$DEMO/serve.id")
wait_state "$TRAIN" PREEMPTING 10
echo "training is told to checkpoint and exit (SIGUSR1 to mpirun, forwarded to every rank)"
wait_state "$TRAIN" COOLDOWN 30
T_YIELD=$(date +%s%N)
wait_state "$SERVE" RUNNING 30
T_SERVE=$(date +%s%N)
echo "training yielded $(secs "$T_SUBMIT" "$T_YIELD") s after the inference submit;" \
  "inference ran $(secs "$T_SUBMIT" "$T_SERVE") s after it"
{ alice logs "$TRAIN" --attempt 1 | grep -E 'evicted|step' | tail -n 2; } || true
show alice queue

sleep 3
show bob logs "$SERVE"

say "3. traffic drops: bob scales the service down; training waits out its cooldown"
show bob cancel "$SERVE" --reason "traffic peak over"
show alice explain "$TRAIN"
wait_state "$TRAIN" RUNNING 60
for _ in $(seq 100); do alice logs "$TRAIN" | grep -q 'step' && break; sleep 0.1; done
echo "resumed as attempt 2:"; { alice logs "$TRAIN" | grep -E 'restored|step' | head -n 2; } || true
wait_state "$TRAIN" SUCCEEDED 120
HASH=$(alice logs "$TRAIN" | sed -n 's/.*final weights hash //p')
if [ "$HASH" = "$REFERENCE" ]; then
  echo "final weights hash $HASH = the uninterrupted run's: nothing was lost or repeated"
else
  echo "demo: final hash $HASH differs from the reference $REFERENCE" >&2; exit 1
fi

say "4. timeline"
show alice status "$TRAIN"
alice status "$SERVE" | sed -n '/Events:/,$p'
echo "witness (every rank's start/end, appended under flock; attempts never overlap):"
grep -v '^alive' "$DEMO/shared/ckpt/WITNESS" | awk '{print "  " $0}'

say "5. the event log and the metrics"
show alice events --job "$TRAIN" --kind eviction
show alice events --tail 8
if [ -s "$DEMO/metrics.addr" ] && command -v curl >/dev/null; then
  echo "coordinator metrics at http://$(cat "$DEMO/metrics.addr")/metrics (alerts, dashboard: scripts/monitoring)"
  curl -s "http://$(cat "$DEMO/metrics.addr")/metrics" |
    grep -E '^baton_(jobs_(submitted|finished)_total|evictions_total|pending_jobs|agents_connected)' || true
fi
if [ -s "$DEMO/web.addr" ]; then
  say "6. the web dashboard (docs/web.md)"
  echo "served on https://$(cat "$DEMO/web.addr") with the coordinator's certificate (CA: $BATON_CA);"
  echo "baton ui prints a one-time login link (60 s, works once):"
  alice ui | sed 's/^/  /'
fi
