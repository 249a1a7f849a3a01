#!/usr/bin/env bash
# A benchmark killed mid-run (SIGKILL: no destructor runs) leaves nothing of its run
# behind, instead of running on under the next measurement:
#   submit     baton-bench-submit's coordinator and munged go within seconds
#              (bench/daemons.h's TeardownGuard);
#   isolation  baton-bench-isolation killed while its agent runs a job: no process naming
#              its directory, no namespace, cgroup, nft table or directory of the run.
#   tests/bench_teardown_test.sh BIN_DIR submit|isolation
set -uo pipefail
bin_dir=$1
which=$2
if [[ $(id -u) -ne 0 ]]; then
  echo "skipped: needs root (the benchmark's munged, agents, cgroups and namespaces)"
  exit 0
fi
# Running: not gone and not a zombie (an orphan's zombie waits for its new parent's wait).
running() { [[ -n $(ps -o stat= -p "$1" | grep -v '^Z') ]]; }
# The --data-dir a daemon was started with.
data_dir_of() { tr '\0' '\n' <"/proc/$1/cmdline" | grep -A1 -x -- --data-dir | tail -1; }
# SIGKILL for the benchmark, a second into what it was found doing: no destructor runs.
kill_bench() {
  sleep 1
  kill -KILL "$1"
  wait "$1" 2>/dev/null
}

if [[ $which == isolation ]]; then
  "$bin_dir/baton-bench-isolation" --rounds=1 >/dev/null 2>&1 &
  bench=$!
  agent="" keeper=""
  for _ in $(seq 900); do  # floors and the hand-built tc round first, then the cluster
    agent=$(pgrep -P "$bench" -x baton-agent | head -1)
    [[ -n $agent ]] && keeper=$(pgrep -P "$agent" | head -1)  # a job's keeper
    [[ -n $keeper ]] && break
    sleep 0.1
  done
  if [[ -z $keeper ]]; then
    kill -KILL "$bench"
    echo "FAIL: the benchmark's agent ran no job within 90 s"
    exit 1
  fi
  # The run's directory: the agent's --data-dir is <run>/r0/agent.
  run=$(data_dir_of "$agent")
  run=${run%/r0/agent}
  ns=bbn$((bench % 100000))
  kill_bench "$bench"
  left=""
  for _ in $(seq 300); do
    left=""
    for pid in $(pgrep -f -- "$run/"); do running "$pid" && left+=" process $pid"; done
    ip netns list | grep -qw "$ns" && left+=" namespace $ns"
    for d in /sys/fs/cgroup/*/baton-bench-$bench /sys/fs/cgroup/baton-bench-$bench \
             /sys/fs/cgroup/*/baton-bench-floor-$bench; do
      [[ -d $d ]] && left+=" cgroup $d"
    done
    nft list table inet "baton_bench$bench" >/dev/null 2>&1 && left+=" nft table baton_bench$bench"
    [[ -e $run ]] && left+=" directory $run"
    [[ -z $left ]] && break
    sleep 0.1
  done
  if [[ -n $left ]]; then
    echo "FAIL: 30 s after the benchmark was killed, still there:$left"
    exit 1
  fi
  echo "a killed isolation benchmark left nothing of its run"
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
run=$(data_dir_of "$coordinator")
run=${run%/coordinator}
munged=$(pgrep -f -- "--socket=$run/munge/munge.socket" | head -1)
if [[ -z $munged ]]; then
  kill -KILL "$bench"
  echo "FAIL: no munged for $run"
  exit 1
fi
kill_bench "$bench"
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
