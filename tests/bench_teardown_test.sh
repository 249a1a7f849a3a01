#!/usr/bin/env bash
# A benchmark killed mid-run (SIGKILL: no destructor runs) leaves none of its daemons
# behind: the coordinator and munged it started go within seconds (bench/daemons.h's
# TeardownGuard), instead of running on under the next measurement.
#   tests/bench_teardown_test.sh BIN_DIR
set -uo pipefail
bin_dir=$1
if [[ $(id -u) -ne 0 ]]; then
  echo "skipped: needs root (the benchmark's munged and agents)"
  exit 0
fi
"$bin_dir/baton-bench-submit" --cli-submits=100000 >/dev/null 2>&1 &
bench=$!
coordinator=""
for _ in $(seq 300); do  # its first phase starts a coordinator
  coordinator=$(pgrep -P "$bench" -x baton-coordinat | head -1)
  [[ -n $coordinator ]] && break
  sleep 0.1
done
if [[ -z $coordinator ]]; then
  kill -KILL "$bench"
  echo "FAIL: the benchmark started no coordinator within 30 s"
  exit 1
fi
# The run's directory: the coordinator's --data-dir is <run>/coordinator.
run=$(tr '\0' '\n' <"/proc/$coordinator/cmdline" | grep -A1 -x -- --data-dir | tail -1)
run=${run%/coordinator}
munged=$(pgrep -f -- "--socket=$run/munge/munge.socket" | head -1)
if [[ -z $munged ]]; then
  kill -KILL "$bench"
  echo "FAIL: no munged for $run"
  exit 1
fi
sleep 1
kill -KILL "$bench"
wait "$bench" 2>/dev/null
# Running: not gone and not a zombie (an orphan's zombie waits for its new parent's wait).
running() { [[ -n $(ps -o stat= -p "$1" | grep -v '^Z') ]]; }
left=""
for _ in $(seq 200); do
  left=""
  running "$coordinator" && left+=" coordinator $coordinator"
  running "$munged" && left+=" munged $munged"
  [[ -z $left ]] && break
  sleep 0.1
done
[[ ${run%/*} == */baton-bench-submit.* ]] && rm -rf "${run%/*}"  # what its end would remove
if [[ -n $left ]]; then
  kill -KILL "$coordinator" "$munged" 2>/dev/null
  echo "FAIL: 20 s after the benchmark was killed, still running:$left"
  exit 1
fi
echo "a killed benchmark's coordinator and munged are gone"
