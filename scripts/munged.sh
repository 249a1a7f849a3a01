#!/usr/bin/env bash
# A private munged for a test or demo cluster: its own key and socket under DIR, no
# system service touched (a real cluster runs Debian's munge service on every node with
# one shared key, as Slurm sites do).
#   scripts/munged.sh start DIR    DIR/munge.socket once it answers (prints its path)
#   scripts/munged.sh stop DIR
# DIR itself and the socket are reachable by every user (so test users can get
# credentials); the key lives in DIR/key (0700).
set -euo pipefail

cmd=${1:-}
DIR=${2:-}
[ -n "$cmd" ] && [ -n "$DIR" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
MUNGED=${MUNGED:-/usr/sbin/munged}

stop() {
  [ -f "$DIR/munged.pid" ] || return 0
  local pid
  pid=$(cat "$DIR/munged.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/munged.pid"
}

case "$cmd" in
  start)
    [ -x "$MUNGED" ] || { echo "munged.sh: $MUNGED not found (apt-get install munge)" >&2; exit 1; }
    mkdir -p "$DIR/key"
    chmod 0755 "$DIR"
    chmod 0700 "$DIR/key"
    if [ ! -s "$DIR/key/munge.key" ]; then
      dd if=/dev/urandom of="$DIR/key/munge.key" bs=1024 count=1 status=none
      chmod 0400 "$DIR/key/munge.key"
    fi
    stop
    rm -f "$DIR/munge.socket" "$DIR/munge.socket.lock"
    "$MUNGED" --force --socket="$DIR/munge.socket" --key-file="$DIR/key/munge.key" \
      --log-file="$DIR/munged.log" --pid-file="$DIR/munged.pid" --seed-file="$DIR/key/seed" \
      --num-threads=4 9>&-
    for _ in $(seq 200); do
      if munge -n -S "$DIR/munge.socket" 2>/dev/null | unmunge -S "$DIR/munge.socket" >/dev/null 2>&1; then
        echo "$DIR/munge.socket"
        exit 0
      fi
      sleep 0.05
    done
    echo "munged.sh: munged did not answer on $DIR/munge.socket; see $DIR/munged.log" >&2
    exit 1
    ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
