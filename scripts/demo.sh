#!/usr/bin/env bash
# The main demo: a local cluster (a coordinator and two agents on loopback, each with two
# fake GPUs, all state in one temp dir), a 2-node training job submitted and followed to
# its end, a job waiting for room, queue and status, a cancel, the event log, where the
# Prometheus metrics are (and a few of them), and a clean shutdown.
#   scripts/demo.sh              build if needed, run, clean up
#   BATON_DEMO_KEEP=1 scripts/demo.sh   keep the data dir for a look afterwards
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja >/dev/null
cmake --build "$BUILD_DIR" --target baton baton-agent baton-coordinator -j "$(nproc)"
BIN=$(cd "$BUILD_DIR/bin" && pwd)
REPO=$(pwd)

DEMO=$(mktemp -d /tmp/baton-demo.XXXXXX)
PIDS=()
cleanup() {
  set +e
  echo
  echo "== shutting down (agents, then the coordinator)"
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  if [ -n "${BATON_DEMO_KEEP:-}" ]; then echo "data and logs kept in $DEMO"; else rm -rf "$DEMO"; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "starting the coordinator (gRPC on loopback, RocksDB in $DEMO/coordinator)"
"$BIN/baton-coordinator" --listen 127.0.0.1:0 --data-dir "$DEMO/coordinator" \
  --ready-file "$DEMO/coordinator.addr" --metrics-listen 127.0.0.1:0 \
  --metrics-ready-file "$DEMO/coordinator.metrics" >"$DEMO/coordinator.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$DEMO/coordinator.addr" ] && break; sleep 0.1; done
export BATON_COORDINATOR=$(cat "$DEMO/coordinator.addr")
export BATON_USER=alice BATON_TENANT=vision
echo "coordinator at $BATON_COORDINATOR"
echo "coordinator metrics at http://$(cat "$DEMO/coordinator.metrics")/metrics"

step "starting two node agents with two fake GPUs each"
for n in 1 2; do
  "$BIN/baton-agent" --name "node$n" --coordinator "$BATON_COORDINATOR" \
    --data-dir "$DEMO/node$n" --fake-gpus 2 --fake-gpu-model H200 \
    --metrics-listen 127.0.0.1:0 --metrics-ready-file "$DEMO/node$n.metrics" \
    >"$DEMO/node$n.log" 2>&1 &
  PIDS+=($!)
done
for n in 1 2; do
  for _ in $(seq 100); do [ -s "$DEMO/node$n.metrics" ] && break; sleep 0.1; done
  echo "node$n metrics at http://$(cat "$DEMO/node$n.metrics")/metrics"
done
for _ in $(seq 100); do
  [ "$("$BIN/baton" nodes --json 2>/dev/null | grep -c NODE_STATE_READY)" = 2 ] && break
  sleep 0.1
done
show "$BIN/baton" nodes

step "alice submits a 2-node x 2-rank training job and follows it (progress on stderr)"
show "$BIN/baton" submit --name demo-train --nodes 2 --ranks-per-node 2 --gpus 2 --cpus 1 \
  --mem 512Mi --wait -- "$REPO/examples/demo_train.sh" 8

step "its output, one line per rank and step"
show "$BIN/baton" logs 1
show "$BIN/baton" logs 1 --node node2

step "a long job takes every GPU; the next one waits for room"
show "$BIN/baton" submit --name long --nodes 2 --gpus 2 -- sleep 600
show "$BIN/baton" submit --name waits --gpus 1 --class experiment -- true
sleep 1
show "$BIN/baton" queue

step "status of the long job"
show "$BIN/baton" status 2

step "cancelling it lets the waiting job run"
show "$BIN/baton" cancel 2 --reason "demo over"
for _ in $(seq 100); do
  "$BIN/baton" status 3 --json | grep -q JOB_STATE_SUCCEEDED && break
  sleep 0.1
done
show "$BIN/baton" queue --all

step "the event log: every transition, scheduling decision, eviction, refusal and node change"
show "$BIN/baton" submit --gpus 64 -- true || true
show "$BIN/baton" events --tail 12
show "$BIN/baton" events --job 2

step "Prometheus metrics (scrape config and alert rules: scripts/monitoring)"
echo "coordinator: http://$(cat "$DEMO/coordinator.metrics")/metrics   (and /healthz)"
for n in 1 2; do echo "node$n:       http://$(cat "$DEMO/node$n.metrics")/metrics"; done
if command -v curl >/dev/null; then
  curl -s "http://$(cat "$DEMO/coordinator.metrics")/metrics" |
    grep -E '^baton_(jobs_(submitted|finished)_total|pending_jobs|agents_connected|submissions_refused_total|admission_wait_seconds_count)' || true
  curl -s "http://$(cat "$DEMO/node1.metrics")/metrics" | grep -E '^baton_node_(free_)?gpus' || true
fi
