// The agent's decisions over fakes: no fork, no gRPC, no root. Each test runs real Agents
// against an in-memory coordinator (memory_coordinator.h) and processes that are never
// forked (fake_processes.h), on a fake clock, several agents in one binary: launch,
// a rank's failure, kill and its grace, eviction and its moving deadline, the ranks'
// signals, reconciliation at registration, being cut off, and a launch stuck in its
// slow part holding up nothing (not even under the agent's lock: heartbeats are acked
// meanwhile). Re-adopting processes after a restart needs real processes in cgroups
// (isolation_os_test).
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/daemon.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/epoch_fence.h"
#include "tests/launcher/agent_wire.h"
#include "tests/launcher/fake_processes.h"
#include "tests/launcher/memory_coordinator.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::AckCommand;
using launcher_testing::FakeProcesses;
using launcher_testing::KillCommand;
using launcher_testing::LaunchCommand;
using launcher_testing::MemoryCoordinator;
using launcher_testing::ObserverLog;
using launcher_testing::ScratchDir;
using ::testing::HasSubstr;
using Phase = v1::AttemptReport::Phase;
using Received = MemoryCoordinator::Received;

constexpr absl::Duration kHeartbeat = absl::Seconds(1);

std::string CurrentUser() {
  const passwd* pw = getpwuid(geteuid());
  return pw ? pw->pw_name : "root";
}

// One node: its coordinator link, its processes and its agent (destroyed first).
struct Node {
  Node(const std::string& node, absl::Duration lease)
      : name(node), coordinator(kHeartbeat, lease) {}
  ~Node() {
    processes.ReleaseAll();  // a failed test may leave a launch held
    if (agent) agent->Stop();
  }
  std::string name;
  MemoryCoordinator coordinator;
  FakeProcesses processes;
  ObserverLog observer;
  std::unique_ptr<Agent> agent;
};

class AgentLogicTest : public ::testing::Test {
 protected:
  Node& AddNode(const std::string& name, absl::Duration lease = absl::Hours(1)) {
    nodes_.push_back(std::make_unique<Node>(name, lease));
    Node& n = *nodes_.back();
    AgentOptions o;
    o.node_name = name;
    o.coordinator = "in-memory";
    o.data_dir = dir_.Sub(name);
    o.reconnect_max_backoff = absl::Milliseconds(100);
    o.retention = absl::ZeroDuration();  // no janitor
    o.launch_workers = 2;
    o.kill_jobs_on_stop = false;  // what is left ends with the fakes
    v1::Inventory inv;
    inv.set_cpus(4);
    inv.set_memory_bytes(8ull << 30);
    n.agent = std::make_unique<Agent>(o, inv, &clock_, /*isolator=*/nullptr, &n.observer,
                                      &n.processes, &n.coordinator);
    n.agent->Start("127.0.0.1:7070");
    return n;
  }

  // A launch of `ranks` ranks of `job` on `node`, run as this test's own user.
  static v1::CoordinatorCommand Launch(uint64_t job, uint32_t ranks, const Node& node,
                                       uint32_t attempt = 1) {
    v1::CoordinatorCommand cmd = LaunchCommand(job, {"train"}, ranks, {}, attempt, node.name);
    cmd.mutable_launch()->set_user(CurrentUser());
    cmd.mutable_launch()->set_master_port(0);
    return cmd;
  }
  static v1::CoordinatorCommand Preempt(uint64_t job, absl::Time deadline) {
    v1::CoordinatorCommand cmd;
    cmd.mutable_preempt()->set_job_id(job);
    cmd.mutable_preempt()->set_attempt(1);
    cmd.mutable_preempt()->set_deadline_ms(absl::ToUnixMillis(deadline));
    return cmd;
  }
  static v1::CoordinatorCommand SignalRanks(uint64_t job, int signal) {
    v1::CoordinatorCommand cmd;
    cmd.mutable_signal()->set_job_id(job);
    cmd.mutable_signal()->set_attempt(1);
    cmd.mutable_signal()->set_signal(signal);
    return cmd;
  }

  static std::optional<v1::AttemptReport> WaitReport(Node& n, uint64_t job, Phase phase,
                                                     size_t from = 0) {
    auto r = n.coordinator.WaitFor(
        [&](const Received& m) {
          return m.msg.has_report() && m.msg.report().job_id() == job &&
                 m.msg.report().phase() == phase;
        },
        from);
    if (!r) return std::nullopt;
    return r->msg.report();
  }
  // Launches `job` and waits until its `ranks` processes run and it is reported running:
  // its processes in rank order, or none when that did not happen.
  static std::vector<FakeProcesses::Proc> Run(Node& n, uint64_t job, uint32_t ranks) {
    if (!n.coordinator.Push(Launch(job, ranks, n))) return {};
    auto procs = n.processes.WaitForLive(job, ranks);
    if (!WaitReport(n, job, v1::AttemptReport::PHASE_RUNNING)) return {};
    return procs;
  }
  // The next registration, from message `from` on.
  static std::optional<v1::Register> WaitRegister(Node& n, size_t from) {
    auto r = n.coordinator.WaitFor([](const Received& m) { return m.msg.has_register_(); }, from);
    if (!r) return std::nullopt;
    return r->msg.register_();
  }
  // Commands are handled in order: once a later launch is reported running, every
  // command before it has been handled.
  void Barrier(Node& n) { ASSERT_EQ(Run(n, next_barrier_++, 1).size(), 1u); }
  // Moves the clock by `d` (at least a heartbeat interval) and waits for a heartbeat sent
  // at the new time: the agent's worker has made a pass since, checking every deadline
  // (it does so before it sends the heartbeat). A heartbeat due as the agent reconnects
  // may go with the old stream: then the clock moves one more interval, for the next.
  void AdvanceAndPass(Node& n, absl::Duration d) {
    for (int tries = 0; tries < 3; ++tries) {
      size_t from = n.coordinator.count();
      clock_.Advance(tries == 0 ? d : kHeartbeat);
      int64_t now = clock_.NowMs();
      auto m = n.coordinator.WaitFor(
          [&](const Received& m) {
            return m.msg.has_register_() ||
                   (m.msg.has_heartbeat() && m.msg.heartbeat().time_ms() >= now);
          },
          from);
      ASSERT_TRUE(m) << "no worker pass after the clock moved";
      if (m->msg.has_heartbeat()) return;
    }
    FAIL() << "no heartbeat after the agent reconnected";
  }

  // After `before` more of the clock, `pid` has had no SIGKILL (else fails saying `why`);
  // after `after` more, it has.
  void ExpectSigkillOnlyAfter(Node& n, pid_t pid, absl::Duration before, absl::Duration after,
                              const char* why) {
    AdvanceAndPass(n, before);
    EXPECT_EQ(n.processes.Count(pid, SIGKILL), 0) << why;
    AdvanceAndPass(n, after);
    ASSERT_TRUE(n.processes.WaitForSignal(pid, SIGKILL));
  }

  ScratchDir dir_;
  FakeClock clock_;
  std::vector<std::unique_ptr<Node>> nodes_;
  uint64_t next_barrier_ = 100'000;
};

TEST_F(AgentLogicTest, SeveralAgentsInOneProcessEachRunTheirOwnAttempts) {
  std::vector<Node*> nodes = {&AddNode("n0"), &AddNode("n1"), &AddNode("n2")};
  for (size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_TRUE(nodes[i]->coordinator.Push(Launch(10 + i, 2, *nodes[i])));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node& n = *nodes[i];
    uint64_t job = 10 + i;
    auto reg = WaitRegister(n, 0);
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->node(), n.name);
    auto procs = n.processes.WaitForLive(job, 2);
    ASSERT_EQ(procs.size(), 2u);
    // One process group per attempt, led by its first rank; each rank's own environment.
    EXPECT_EQ(procs[0].pgid, procs[0].pid);
    EXPECT_EQ(procs[1].pgid, procs[0].pid);
    EXPECT_THAT(procs[0].env_of, HasSubstr("LOCAL_RANK=0\n"));
    EXPECT_THAT(procs[1].env_of, HasSubstr("LOCAL_RANK=1\n"));
    EXPECT_THAT(procs[1].env_of, HasSubstr("BATON_JOB_ID=" + std::to_string(job) + "\n"));
    ASSERT_TRUE(WaitReport(n, job, v1::AttemptReport::PHASE_RUNNING));
    ASSERT_TRUE(n.processes.Exit(procs[0].pid, {0, 0}));
    ASSERT_TRUE(n.processes.Exit(procs[1].pid, {0, 0}));
    auto end = WaitReport(n, job, v1::AttemptReport::PHASE_EXITED);
    ASSERT_TRUE(end);
    EXPECT_EQ(end->exit_code(), 0);
    EXPECT_FALSE(end->killed());
  }
  // Each coordinator heard of its own node's attempt only; no process ran elsewhere.
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Received& m : nodes[i]->coordinator.received()) {
      if (m.msg.has_report()) {
        EXPECT_EQ(m.msg.report().job_id(), 10 + i);
      }
    }
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (j != i) {
        EXPECT_TRUE(nodes[i]->processes.Of(10 + j).empty());
      }
    }
  }
}

TEST_F(AgentLogicTest, AFailingRankStopsTheOthersOnItsNodeAndKillsThemAfterTheLocalGrace) {
  Node& n = AddNode("n0");
  n.processes.IgnoreTerm(20);
  auto procs = Run(n, 20, 3);
  ASSERT_EQ(procs.size(), 3u);
  ASSERT_TRUE(n.processes.Exit(procs[0].pid, {3, 0}));
  // SIGTERM to the group; they ignore it, so SIGKILL follows the local grace (5 s).
  ASSERT_TRUE(n.processes.WaitForSignal(procs[1].pid, SIGTERM));
  EXPECT_EQ(n.processes.Count(procs[2].pid, SIGTERM), 1);
  ASSERT_NO_FATAL_FAILURE(ExpectSigkillOnlyAfter(
      n, procs[1].pid, absl::Seconds(4), absl::Seconds(2), "killed before the local grace"));
  auto end = WaitReport(n, 20, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 3);  // the first failure's, not the kill's
  EXPECT_EQ(end->term_signal(), 0);
  EXPECT_FALSE(end->killed());  // the job failed; nobody told it to stop
  EXPECT_THAT(end->message(), HasSubstr("a rank exited with code 3"));
}

TEST_F(AgentLogicTest, AKillSendsItsSignalThenSigkillWhenTheGraceRunsOut) {
  Node& n = AddNode("n0");
  n.processes.IgnoreTerm(30);
  ASSERT_TRUE(n.coordinator.Push(Launch(30, 2, n)));
  ASSERT_TRUE(n.coordinator.Push(Launch(31, 1, n)));
  auto procs = n.processes.WaitForLive(30, 2);
  ASSERT_EQ(procs.size(), 2u);
  ASSERT_TRUE(WaitReport(n, 30, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(n.coordinator.Push(KillCommand(30, SIGTERM, 10)));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[0].pid, SIGTERM));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[1].pid, SIGTERM));
  ASSERT_NO_FATAL_FAILURE(ExpectSigkillOnlyAfter(n, procs[0].pid, absl::Seconds(9),
                                                 absl::Seconds(2), "killed within its grace"));
  auto end = WaitReport(n, 30, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGKILL);

  // No grace: SIGKILL at once, and nothing before it.
  auto other = n.processes.WaitForLive(31, 1);
  ASSERT_EQ(other.size(), 1u);
  ASSERT_TRUE(WaitReport(n, 31, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(n.coordinator.Push(KillCommand(31, SIGTERM, 0)));
  ASSERT_TRUE(n.processes.WaitForSignal(other[0].pid, SIGKILL));
  EXPECT_EQ(n.processes.Count(other[0].pid, SIGTERM), 0);
  ASSERT_TRUE(WaitReport(n, 31, v1::AttemptReport::PHASE_EXITED));
}

TEST_F(AgentLogicTest, AnEvictionSignalsTheRanksOnceAndKillsAtItsLatestDeadline) {
  Node& n = AddNode("n0");
  auto procs = Run(n, 40, 2);
  ASSERT_EQ(procs.size(), 2u);
  absl::Time start = clock_.Now();
  ASSERT_TRUE(n.coordinator.Push(Preempt(40, start + absl::Seconds(30))));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[0].pid, SIGUSR1));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[1].pid, SIGUSR1));
  // The coordinator moves the deadline (a checkpoint is being written): no second
  // SIGUSR1 (a rank that has saved may have put back its default action), a later kill.
  ASSERT_TRUE(n.coordinator.Push(Preempt(40, start + absl::Seconds(60))));
  Barrier(n);
  AdvanceAndPass(n, absl::Seconds(40));
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGKILL), 0) << "killed at the first deadline";
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGUSR1), 1);
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGTERM), 0);  // the ranks only, never the group
  AdvanceAndPass(n, absl::Seconds(21));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[0].pid, SIGKILL));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[1].pid, SIGKILL));
  auto end = WaitReport(n, 40, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  EXPECT_EQ(end->term_signal(), SIGKILL);
}

TEST_F(AgentLogicTest, SignalsReachTheRanksOnlyAndOnlyTheCheckpointSignals) {
  Node& n = AddNode("n0");
  auto procs = Run(n, 50, 2);
  ASSERT_EQ(procs.size(), 2u);
  ASSERT_TRUE(n.coordinator.Push(SignalRanks(50, SIGUSR2)));
  ASSERT_TRUE(n.coordinator.Push(SignalRanks(50, SIGTERM)));  // not a checkpoint signal
  Barrier(n);
  for (const auto& p : procs) {
    EXPECT_EQ(n.processes.Count(p.pid, SIGUSR2), 1);
    EXPECT_EQ(n.processes.Count(p.pid, SIGTERM), 0);
  }
  EXPECT_EQ(n.processes.WaitForLive(50, 2).size(), 2u);  // nothing else follows
}

TEST_F(AgentLogicTest, ARegistrationCarriesEveryAttemptTheCoordinatorHasNotAcknowledged) {
  Node& n = AddNode("n0");
  ASSERT_TRUE(n.coordinator.Push(Launch(60, 1, n)));
  ASSERT_TRUE(n.coordinator.Push(Launch(61, 1, n)));
  auto done = n.processes.WaitForLive(60, 1);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_TRUE(WaitReport(n, 60, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(WaitReport(n, 61, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(n.processes.Exit(done[0].pid, {7, 0}));
  ASSERT_TRUE(WaitReport(n, 60, v1::AttemptReport::PHASE_EXITED));

  auto phases = [](const v1::Register& reg) {
    std::map<uint64_t, Phase> out;
    for (const auto& a : reg.attempts()) out[a.job_id()] = a.phase();
    return out;
  };
  size_t from = n.coordinator.count();
  n.coordinator.Drop();
  auto reg = WaitRegister(n, from);
  ASSERT_TRUE(reg);
  auto seen = phases(*reg);
  EXPECT_EQ(seen[60], v1::AttemptReport::PHASE_EXITED);
  EXPECT_EQ(seen[61], v1::AttemptReport::PHASE_RUNNING);
  for (const auto& a : reg->attempts()) {
    if (a.job_id() == 60) {
      EXPECT_EQ(a.exit_code(), 7);
    }
  }

  // Acknowledged, the end is forgotten; what still runs is carried on.
  ASSERT_TRUE(n.coordinator.Push(AckCommand(60)));
  Barrier(n);
  from = n.coordinator.count();
  n.coordinator.Drop();
  reg = WaitRegister(n, from);
  ASSERT_TRUE(reg);
  seen = phases(*reg);
  EXPECT_EQ(seen.count(60), 0u);
  EXPECT_EQ(seen[61], v1::AttemptReport::PHASE_RUNNING);
  EXPECT_EQ(n.processes.Of(61).size(), 1u);  // reconnecting started nothing again
}

TEST_F(AgentLogicTest, CutOffPastItsBoundAnAttemptIsToldToCheckpointThenKilledServicesRunOn) {
  Node& n = AddNode("n0", /*lease=*/absl::Seconds(10));
  v1::CoordinatorCommand training = Launch(70, 2, n);
  training.mutable_launch()->set_stop_after_disconnect_ms(20'000);
  training.mutable_launch()->mutable_spec()->set_grace_seconds(30);
  ASSERT_TRUE(n.coordinator.Push(training));
  ASSERT_TRUE(n.coordinator.Push(Launch(71, 1, n)));  // a service: stop_after_disconnect 0
  auto procs = n.processes.WaitForLive(70, 2);
  auto service = n.processes.WaitForLive(71, 1);
  ASSERT_EQ(procs.size(), 2u);
  ASSERT_EQ(service.size(), 1u);
  ASSERT_TRUE(WaitReport(n, 70, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(WaitReport(n, 71, v1::AttemptReport::PHASE_RUNNING));

  // Cut off: the agent's writes still go through, but it hears nothing back.
  n.coordinator.SetMute(true);
  AdvanceAndPass(n, absl::Seconds(15));  // past the lease (it reconnects), within the bound
  AdvanceAndPass(n, absl::Seconds(1));   // the pass before this one checked 15 s of silence
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGUSR1), 0) << "stopped within its bound";
  AdvanceAndPass(n, absl::Seconds(5));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[0].pid, SIGUSR1));
  ASSERT_TRUE(n.processes.WaitForSignal(procs[1].pid, SIGUSR1));
  // Kills are checked before the heartbeat that ends each pass.
  ASSERT_NO_FATAL_FAILURE(ExpectSigkillOnlyAfter(n, procs[0].pid, absl::Seconds(29),
                                                 absl::Seconds(2), "killed within its grace"));
  EXPECT_TRUE(n.processes.Of(71)[0].signals.empty()) << "a service was stopped";
  EXPECT_GE(n.coordinator.sessions(), 2) << "it did not reconnect past its lease";

  size_t from = n.coordinator.count();
  n.coordinator.SetMute(false);
  n.coordinator.Drop();
  auto reg = WaitRegister(n, from);
  ASSERT_TRUE(reg);
  bool saw_training = false, saw_service = false;
  for (const auto& a : reg->attempts()) {
    if (a.job_id() == 70) {
      saw_training = true;
      EXPECT_EQ(a.phase(), v1::AttemptReport::PHASE_EXITED);
      EXPECT_TRUE(a.stopped_disconnected());
      EXPECT_THAT(a.message(), HasSubstr("stop_after_disconnect"));
    }
    if (a.job_id() == 71) {
      saw_service = true;
      EXPECT_EQ(a.phase(), v1::AttemptReport::PHASE_RUNNING);
    }
  }
  EXPECT_TRUE(saw_training && saw_service);
}

TEST_F(AgentLogicTest, ALaunchStuckInItsSpawnHoldsUpNeitherHeartbeatsNorOtherLaunches) {
  Node& n = AddNode("n0");
  ASSERT_TRUE(WaitRegister(n, 0));
  n.processes.Hold(80);
  ASSERT_TRUE(n.coordinator.Push(Launch(80, 1, n)));
  ASSERT_TRUE(n.processes.WaitForHeld(1));
  // The spawn waits, and would wait forever under the agent's lock: a heartbeat goes out
  // and its ack is handled meanwhile, and another launch runs.
  int acks = n.observer.acks();
  AdvanceAndPass(n, kHeartbeat);
  EXPECT_TRUE(launcher_testing::PollUntil([&] { return n.observer.acks() > acks; }));
  ASSERT_TRUE(n.coordinator.Push(Launch(81, 1, n)));
  ASSERT_TRUE(WaitReport(n, 81, v1::AttemptReport::PHASE_RUNNING));
  // Told to stop while it starts: what it started is killed as the start completes.
  ASSERT_TRUE(n.coordinator.Push(KillCommand(80, SIGTERM, 30)));
  Barrier(n);
  n.processes.Release(80);
  auto end = WaitReport(n, 80, v1::AttemptReport::PHASE_EXITED);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->killed());
  auto started = n.processes.Of(80);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].signals, std::vector<int>{SIGKILL});
}

TEST_F(AgentLogicTest, ResentStaleAndUnstartableLaunches) {
  Node& n = AddNode("n0");
  ASSERT_TRUE(n.coordinator.Push(Launch(90, 1, n, /*attempt=*/2)));
  ASSERT_TRUE(WaitReport(n, 90, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_TRUE(n.coordinator.Push(Launch(90, 1, n, /*attempt=*/2)));  // resent
  ASSERT_TRUE(n.coordinator.Push(Launch(90, 1, n, /*attempt=*/1)));  // stale
  Barrier(n);
  EXPECT_EQ(n.processes.Of(90).size(), 1u);

  n.processes.Missing("no-such-trainer");
  v1::CoordinatorCommand bad = Launch(91, 2, n);
  bad.mutable_launch()->mutable_spec()->set_command(0, "no-such-trainer");
  ASSERT_TRUE(n.coordinator.Push(bad));
  auto end = WaitReport(n, 91, v1::AttemptReport::PHASE_REJECTED);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code(), 127);
  EXPECT_THAT(end->message(), HasSubstr("no-such-trainer"));
  EXPECT_TRUE(n.processes.Of(91).empty());
}

TEST_F(AgentLogicTest, ADeposedLeadersOrdersAreIgnoredAndTheEpochOutlivesTheAgent) {
  Node& n = AddNode("n0");
  v1::CoordinatorCommand launch = Launch(40, 1, n);
  launch.set_epoch(7);  // the leader of epoch 7 places the job
  ASSERT_TRUE(n.coordinator.Push(launch));
  auto procs = n.processes.WaitForLive(40, 1);
  ASSERT_EQ(procs.size(), 1u);
  ASSERT_TRUE(WaitReport(n, 40, v1::AttemptReport::PHASE_RUNNING));
  // A leader of an older epoch, deposed but not yet aware of it, orders a kill.
  v1::CoordinatorCommand stale = KillCommand(40, SIGTERM, 0);
  stale.set_epoch(5);
  ASSERT_TRUE(n.coordinator.Push(stale));
  Barrier(n);
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGKILL), 0) << "a deposed leader's kill acted";
  EXPECT_EQ(n.processes.Count(procs[0].pid, SIGTERM), 0) << "a deposed leader's kill acted";
  // Recorded on disk before it acted: a restarted agent starts from epoch 7 too.
  auto recorded = EpochFence::Recorded(dir_.Sub("n0"));
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  EXPECT_EQ(*recorded, 7u);
  EpochFence restarted(dir_.Sub("n0"));
  EXPECT_FALSE(restarted.Accept(5));
  EXPECT_TRUE(restarted.Accept(7));
  // The leader's own kill acts.
  v1::CoordinatorCommand kill = KillCommand(40, SIGTERM, 0);
  kill.set_epoch(7);
  ASSERT_TRUE(n.coordinator.Push(kill));
  EXPECT_TRUE(n.processes.WaitForSignal(procs[0].pid, SIGKILL));
}

TEST(EpochFence, RecordsTheHighestEpochAndRefusesOlderOnes) {
  ScratchDir dir;
  EpochFence fence(dir.path());
  EXPECT_TRUE(fence.Accept(0));  // a single coordinator: always, never recorded
  EXPECT_EQ(*EpochFence::Recorded(dir.path()), 0u);
  EXPECT_TRUE(fence.Accept(12));
  EXPECT_TRUE(fence.Accept(12));
  EXPECT_FALSE(fence.Accept(11));
  EXPECT_TRUE(fence.Accept(0));
  EXPECT_TRUE(fence.Accept(30));
  EXPECT_EQ(fence.highest(), 30u);
  EXPECT_EQ(*EpochFence::Recorded(dir.path()), 30u);
  // A damaged record is named, not read as 0 (which would trust any deposed leader).
  ASSERT_TRUE(WriteFileAtomically(dir.path() + "/leader_epoch", "thirty\n").ok());
  auto bad = EpochFence::Recorded(dir.path());
  EXPECT_TRUE(absl::IsDataLoss(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("leader_epoch"), std::string_view::npos);
}

}  // namespace
}  // namespace baton
