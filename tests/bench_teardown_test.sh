#!/usr/bin/env bash
# A benchmark killed mid-run (SIGKILL: no destructor runs) leaves nothing of its run
# behind, instead of running on under the next measurement:
#   submit     baton-bench-submit's coordinator and munged go within seconds
#              (bench/daemons.h's TeardownGuard);
#   isolation  baton-bench-isolation killed while its agent runs a job: no process naming
#              its directory, no namespace, IFB, cgroup, nft table or directory of the run.
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
# poll TRIES COMMAND...: runs COMMAND every 0.1 s until it succeeds, at most TRIES times.
poll() {
  local tries=$1
  shift
  for _ in $(seq "$tries"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
# Fails the test, the benchmark killed first.
fail_bench() {
  kill -KILL "$bench"
  echo "FAIL: $1"
  exit 1
}
# SIGKILL for the benchmark, a second into what it was found doing, then SECONDS for what
# `leftovers` (each mode's own) lists to be gone; else prints them and returns 1.
kill_and_expect_gone() {
  local seconds=$1
  sleep 1
  kill -KILL "$bench"
  wait "$bench" 2>/dev/null
  nothing_left() { left=$(leftovers); [[ -z $left ]]; }
  poll $((seconds * 10)) nothing_left && return 0
  echo "FAIL: $seconds s after the benchmark was killed, still there:$left"
  return 1
}

if [[ $which == isolation ]]; then
  "$bin_dir/baton-bench-isolation" --rounds=1 >/dev/null 2>&1 &
  bench=$!
  # Floors and the hand-built tc round come first, then the cluster and its jobs.
  agent_runs_a_job() {
    agent=$(pgrep -P "$bench" -x baton-agent | head -1)
    [[ -n $agent && -n $(pgrep -P "$agent" | head -1) ]]  # a job's keeper
  }
  poll 900 agent_runs_a_job || fail_bench "the benchmark's agent ran no job within 90 s"
  # The run's directory: the agent's --data-dir is <run>/r0/agent.
  run=$(data_dir_of "$agent")
  run=${run%/r0/agent}
  ns=bbn$((bench % 100000))
  leftovers() {
    for pid in $(pgrep -f -- "$run/"); do running "$pid" && echo -n " process $pid"; done
    ip netns list | grep -qw "$ns" && echo -n " namespace $ns"
    ip link show "ifb-${ns}a" >/dev/null 2>&1 && echo -n " IFB ifb-${ns}a"
    for d in /sys/fs/cgroup/*/baton-bench-$bench /sys/fs/cgroup/baton-bench-$bench \
             /sys/fs/cgroup/*/baton-bench-floor-$bench; do
      [[ -d $d ]] && echo -n " cgroup $d"
    done
    nft list table inet "baton_bench$bench" >/dev/null 2>&1 && echo -n " nft table baton_bench$bench"
    [[ -e $run ]] && echo -n " directory $run"
  }
  kill_and_expect_gone 30 || exit 1
  echo "a killed isolation benchmark left nothing of its run"
  exit 0
fi

"$bin_dir/baton-bench-submit" --cli-submits=100000 >/dev/null 2>&1 &
bench=$!
coordinator_up() {  # its first phase starts a coordinator
  coordinator=$(pgrep -P "$bench" -x baton-coordinat | head -1)
  [[ -n $coordinator ]]
}
poll 300 coordinator_up || fail_bench "the benchmark started no coordinator within 30 s"
# The run's directory: the coordinator's --data-dir is <run>/coordinator.
run=$(data_dir_of "$coordinator")
run=${run%/coordinator}
munged=$(pgrep -f -- "--socket=$run/munge/munge.socket" | head -1)
[[ -n $munged ]] || fail_bench "no munged for $run"
leftovers() {
  running "$coordinator" && echo -n " coordinator $coordinator"
  running "$munged" && echo -n " munged $munged"
}
kill_and_expect_gone 20
gone=$?
[[ ${run%/*} == */baton-bench-submit.* ]] && rm -rf "${run%/*}"  # what its end would remove
if [[ $gone -ne 0 ]]; then
  kill -KILL "$coordinator" "$munged" 2>/dev/null
  exit 1
fi
echo "a killed benchmark's coordinator and munged are gone"
