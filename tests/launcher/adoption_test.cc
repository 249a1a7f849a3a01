// AdoptedProcessesOf: which processes a restarted agent takes back, from the previous
// agent's record and the attempt's cgroup members now, as a table; no root, no processes.
#include "launcher/agent/adoption.h"

#include <signal.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::adoption_test {
namespace {

constexpr pid_t kOwnGroup = 50;

// Every pid leads its own group, but 101 and 102, which are in 100's.
pid_t GroupOf(pid_t pid) { return pid == 101 || pid == 102 ? 100 : pid; }

struct Proc {
  pid_t pid;
  bool daemon;
  uint32_t local_rank;
  pid_t keeper;
};

v1::AgentAttemptRecord Record(long pgid, const std::vector<Proc>& procs, bool mpi = false,
                              uint32_t node_rank = 0) {
  v1::AgentAttemptRecord r;
  r.set_process_group(static_cast<int32_t>(pgid));
  for (const Proc& p : procs) {
    auto* out = r.add_processes();
    out->set_pid(p.pid);
    out->set_daemon(p.daemon);
    out->set_local_rank(p.local_rank);
    out->set_keeper(p.keeper);
  }
  if (mpi) r.mutable_launch()->mutable_spec()->set_launch_mode(v1::LAUNCH_MODE_MPI);
  r.mutable_launch()->set_node_rank(node_rank);
  return r;
}

struct Row {
  std::string name;
  v1::AgentAttemptRecord record;
  std::vector<pid_t> in_cgroups;
  pid_t pgid;
  std::map<pid_t, uint32_t> ranks;
  std::set<pid_t> daemons;
  std::map<pid_t, pid_t> keepers;
};

TEST(Adoption, WhichProcessesARestartedAgentTakesBackAsATable) {
  const std::vector<Proc> two_ranks = {{100, false, 0, 90}, {101, false, 1, 91}};
  // clang-format off
  const Row rows[] = {
      // name; record; in the cgroups; group; ranks; daemons; keepers
      {"both ranks still run: each with its local rank and keeper",
       Record(100, two_ranks), {100, 101}, 100, {{100, 0}, {101, 1}}, {}, {{100, 90}, {101, 91}}},
      {"a rank gone meanwhile is not taken back",
       Record(100, two_ranks), {101}, 100, {{101, 1}}, {}, {{101, 91}}},
      {"a process in the cgroups the record does not name is not a rank of its own",
       Record(100, two_ranks), {100, 101, 102}, 100, {{100, 0}, {101, 1}}, {},
       {{100, 90}, {101, 91}}},
      {"a recorded pid not in the cgroups (reused by another process) is not believed",
       Record(100, {{100, false, 0, 0}, {4242, false, 1, 0}}), {100}, 100, {{100, 0}}, {}, {}},
      {"a daemon stays a daemon (never sent SIGUSR1)",
       Record(100, {{100, true, 0, 90}, {101, false, 0, 0}}), {100, 101}, 100, {{101, 0}},
       {100}, {{100, 90}}},
      {"a recorded group of init is never believed (kill(-1))",
       Record(1, two_ranks), {100, 101}, 0, {{100, 0}, {101, 1}}, {}, {{100, 90}, {101, 91}}},
      {"nor the agent's own group",
       Record(kOwnGroup, two_ranks), {100, 101}, 0, {{100, 0}, {101, 1}}, {},
       {{100, 90}, {101, 91}}},
      {"nor a group none of the attempt's processes is in",
       Record(777, two_ranks), {100, 101}, 0, {{100, 0}, {101, 1}}, {}, {{100, 90}, {101, 91}}},
      {"a record with no processes: every cgroup member is watched as a rank",
       Record(0, {}), {100, 101}, 0, {{100, 0}, {101, 0}}, {}, {}},
      {"... and on an mpi node after the first, as Open MPI's daemon",
       Record(0, {}, /*mpi=*/true, /*node_rank=*/1), {100, 101}, 0, {}, {100, 101}, {}},
      {"... but never init",
       Record(0, {}), {1, 100}, 0, {{100, 0}}, {}, {}},
      {"a record naming only gone processes: the members are watched",
       Record(100, {{300, false, 0, 0}}), {100}, 100, {{100, 0}}, {}, {}},
  };
  // clang-format on
  for (const Row& row : rows) {
    AdoptedProcesses got = AdoptedProcessesOf(row.record, row.in_cgroups, kOwnGroup, GroupOf);
    EXPECT_EQ(got.pgid, row.pgid) << row.name;
    EXPECT_EQ(got.ranks, row.ranks) << row.name;
    EXPECT_EQ(got.daemons, row.daemons) << row.name;
    EXPECT_EQ(got.keepers, row.keepers) << row.name;
  }
}

TEST(Adoption, AProcessGoneWithoutARecordEndedCleanlyOnlyIfItWasToldToStop) {
  ExitStatus stopped = UnknownAdoptedExit(/*stop_ordered=*/true);
  EXPECT_EQ(stopped.term_signal, SIGKILL);
  EXPECT_EQ(stopped.exit_code, 0);
  ExitStatus unasked = UnknownAdoptedExit(/*stop_ordered=*/false);
  EXPECT_FALSE(unasked.ok()) << "an unexplained end is a failure";
  EXPECT_EQ(unasked.exit_code, 255);
}

}  // namespace
}  // namespace baton::adoption_test
