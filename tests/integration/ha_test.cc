// Coordinator replicas on etcd (docs/ha.md) as real processes: a leader killed during a
// stream of submits from several threads loses no acknowledged submit, reuses no job id
// and restarts no running job; a leader stopped past its lease steps down, rejoins as a
// standby, and no entry of its epoch follows one of the new leader's in the log.
#include <signal.h>

#include <set>
#include <thread>

#include "coordinator/ha/etcd_client.h"
#include "coordinator/ha/replicated_log.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/ha_cluster.h"

namespace baton::testing {
namespace {

TEST(HaFailover, Kill9OfTheLeaderLosesNoAcknowledgedSubmitAndRestartsNoJob) {
  HaCluster c(/*replicas=*/3, /*agents=*/2);
  if (!c.ok()) GTEST_SKIP() << c.why();
  std::string why;
  ASSERT_TRUE(c.StartRunningJobs(2, &why)) << why;
  FailoverResult r = c.KillLeaderUnderSubmits(/*threads=*/3, std::chrono::milliseconds(1500),
                                              /*after=*/5);
  ASSERT_GE(r.failover_s, 0) << "no submit made after the leader's kill was acknowledged";
  EXPECT_GT(r.acked_before_kill, 0u);
  EXPECT_NE(r.new_leader, r.old_leader);
  EXPECT_GE(r.new_leader, 0);
  EXPECT_EQ(r.lost, 0u) << r.detail;
  EXPECT_EQ(r.duplicates, 0u) << r.detail;
  EXPECT_EQ(r.restarted, 0u) << r.detail;
  std::cerr << "acknowledged " << r.acked << " submits (" << r.acked_before_kill
            << " before the kill), " << r.failed << " failed; failover " << r.failover_s << " s\n";
}

TEST(HaFailover, AStoppedLeaderStepsDownAndRejoinsAndItsEpochNeverFollowsTheNext) {
  HaCluster c(/*replicas=*/2, /*agents=*/0);
  if (!c.ok()) GTEST_SKIP() << c.why();
  int leader = c.Leader();
  ASSERT_GE(leader, 0);
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
  pid_t pid = c.ReplicaPid(leader);
  c.SignalReplica(leader, SIGSTOP);
  int next = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        next = c.Leader(std::chrono::milliseconds(100));
        return next >= 0 && next != leader;
      },
      std::chrono::seconds(20)));
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(4));  // twice the TTL, stopped
  c.SignalReplica(leader, SIGCONT);
  // It finds its lease lapsed, stops leading and comes back as a standby (same process,
  // executed again), refusing calls with the new leader's address.
  CommandResult refused;
  EXPECT_TRUE(WaitFor(
      [&] {
        refused =
            c.Baton({"nodes", "--coordinator", c.ReplicaAddress(leader), "--timeout", "2s"}, kRoot);
        return refused.exit_code != 0 &&
               refused.err.find(c.ReplicaAddress(next)) != std::string::npos;
      },
      std::chrono::seconds(20)))
      << refused.err;
  EXPECT_EQ(c.ReplicaPid(leader), pid);
  EXPECT_EQ(kill(pid, 0), 0) << "the deposed leader exited instead of rejoining";
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);

  // The log's epochs never go back.
  ha::EtcdOptions o;
  o.endpoints = {c.etcd().endpoint(0)};
  auto etcd = ha::EtcdClient::Create(o);
  ASSERT_TRUE(etcd.ok());
  ha::ReplicatedLog log(etcd->get(), ha::HaKeys("/baton"));
  auto first = log.FirstIndex();
  ASSERT_TRUE(first.ok());
  auto entries = log.Read(*first, 100000);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_FALSE(entries->empty());
  std::set<uint64_t> epochs = {(*entries)[0].epoch};
  for (size_t i = 1; i < entries->size(); ++i) {
    EXPECT_LE((*entries)[i - 1].epoch, (*entries)[i].epoch)
        << "entry " << (*entries)[i].index << " of epoch " << (*entries)[i].epoch
        << " follows one of epoch " << (*entries)[i - 1].epoch;
    epochs.insert((*entries)[i].epoch);
  }
  EXPECT_GE(epochs.size(), 2u) << "the log does not show the second leader";
}

TEST(HaFailover, StepDownHandsOverToAWarmStandbyAndStatusShowsTheReplicas) {
  HaCluster c(/*replicas=*/2, /*agents=*/0);
  if (!c.ok()) GTEST_SKIP() << c.why();
  int leader = c.Leader();
  ASSERT_GE(leader, 0);
  CommandResult sub = c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  uint64_t job = ClusterClient::SubmittedId(sub.out);
  CommandResult status;
  ASSERT_TRUE(WaitFor(
      [&] {  // each replica says where it is every second
        status = c.Baton({"admin", "ha", "status", "--json"}, kRoot);
        auto j = nlohmann::json::parse(status.out, nullptr, false);
        return status.exit_code == 0 && !j.is_discarded() && j.contains("replicas") &&
               j["replicas"].size() == 2;
      },
      std::chrono::seconds(10)))
      << status.out << status.err;
  auto j = nlohmann::json::parse(status.out);
  EXPECT_EQ(j["leader"], "c" + std::to_string(leader));
  ASSERT_EQ(j["etcd"].size(), 1u);
  EXPECT_TRUE(j["etcd"][0].value("healthy", false)) << status.out;
  CommandResult denied = c.Baton({"admin", "ha", "status"});  // alice is no admin
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.err.find("admin"), std::string::npos) << denied.err;

  CommandResult handed = c.Baton({"admin", "ha", "step-down"}, kRoot);
  ASSERT_EQ(handed.exit_code, 0) << handed.err;
  EXPECT_NE(handed.out.find("leads"), std::string::npos) << handed.out;
  int next = c.Leader();
  EXPECT_GE(next, 0);
  EXPECT_NE(next, leader);
  EXPECT_EQ(c.StateOf(job), "JOB_STATE_PENDING") << c.Describe(job);
}

TEST(HaFailover, ALeaderCutOffFromEtcdAloneStopsLeadingAndRejoinsWhenHealed) {
  HaCluster c(/*replicas=*/2, /*agents=*/0, /*ttl=*/"2s", /*etcd_members=*/1, /*proxied=*/0);
  if (!c.ok()) GTEST_SKIP() << c.why();
  // Replica 0, the one behind proxies, must lead: hand over to it if the other does.
  ASSERT_TRUE(WaitFor(
      [&] {
        int l = c.Leader();
        if (l == 1) c.Baton({"admin", "ha", "step-down"}, kRoot);
        return l == 0;
      },
      std::chrono::seconds(60)));
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
  pid_t pid = c.ReplicaPid(0);
  c.CutOffFromEtcd();
  // It stops leading as its lease may lapse; the other takes over once it has lapsed.
  ASSERT_TRUE(WaitFor([&] { return c.ReplicaLog(0).find("stops leading") != std::string::npos; },
                      std::chrono::seconds(10)))
      << c.ReplicaLog(0);
  int next = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        next = c.Leader(std::chrono::milliseconds(100));
        return next == 1;
      },
      std::chrono::seconds(20)));
  // Never two leaders: c0 had stopped before c1 began (the logs' wall-clock stamps, one
  // host, the same format: they compare as strings).
  auto stamp = [](const std::string& log, const std::string& what) {
    size_t at = log.rfind(what);  // the last time it happened
    if (at == std::string::npos) return std::string("~");
    size_t line = log.rfind('\n', at);
    return log.substr(line == std::string::npos ? 0 : line + 1, 23);
  };
  EXPECT_LE(stamp(c.ReplicaLog(0), "c0 stops leading"), stamp(c.ReplicaLog(1), "c1 leads, epoch"))
      << c.ReplicaLog(0) << c.ReplicaLog(1);
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
  // Healed: the same process (executed again) joins as a standby, naming the leader.
  c.HealEtcd();
  CommandResult refused;
  EXPECT_TRUE(WaitFor(
      [&] {
        refused =
            c.Baton({"nodes", "--coordinator", c.ReplicaAddress(0), "--timeout", "2s"}, kRoot);
        return refused.exit_code != 0 && refused.err.find("the leader is c1") != std::string::npos;
      },
      std::chrono::seconds(30)))
      << refused.err << c.ReplicaLog(0);
  EXPECT_EQ(c.ReplicaPid(0), pid);
  EXPECT_EQ(kill(pid, 0), 0) << "the cut-off replica exited instead of rejoining";
}

TEST(HaFailover, LosingTheEtcdLeaderMovesNoCoordinator) {
  HaCluster c(/*replicas=*/2, /*agents=*/0, /*ttl=*/"5s", /*etcd_members=*/3);
  if (!c.ok()) GTEST_SKIP() << c.why();
  int leader = c.Leader();
  ASSERT_GE(leader, 0);
  ASSERT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
  int member = c.etcd().Leader();
  ASSERT_GE(member, 0);
  c.etcd().Kill(member, SIGKILL);
  // Writes resume once etcd has elected again (its calls move to a live member).
  for (int i = 0; i < 3; ++i) {
    CommandResult r =
        c.Baton({"submit", "-q", "--gpus", "0", "--timeout", "20s", "--", "sleep", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(c.Leader(), leader) << "the etcd leader's loss moved the coordinator";
  EXPECT_EQ(c.ReplicaLog(leader).find("stops leading"), std::string::npos) << c.ReplicaLog(leader);
}

TEST(HaFailover, WithoutEtcdQuorumSubmitsFailClearlyJobsRunOnAndAllResumesAfter) {
  HaCluster c(/*replicas=*/2, /*agents=*/1, /*ttl=*/"2s", /*etcd_members=*/3);
  if (!c.ok()) GTEST_SKIP() << c.why();
  std::string why;
  ASSERT_TRUE(c.StartRunningJobs(1, &why)) << why;
  c.etcd().Kill(0, SIGKILL);
  c.etcd().Kill(1, SIGKILL);
  // The leader cannot renew its lease: it stops leading, and nobody leads.
  CommandResult refused;
  EXPECT_TRUE(WaitFor(
      [&] {
        refused = c.Baton({"submit", "-q", "--gpus", "0", "--timeout", "3s", "--", "sleep", "1"});
        return refused.exit_code == 5;
      },
      std::chrono::seconds(30)))
      << refused.exit_code << " " << refused.err;
  EXPECT_NE(refused.err.find("no replica led"), std::string::npos) << refused.err;
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(c.RunningJobsChanged(/*ask=*/false), "") << "a job stopped without etcd's quorum";
  c.etcd().Start(0);
  c.etcd().Start(1);
  ASSERT_TRUE(c.etcd().WaitHealthy(std::chrono::seconds(30)));
  CommandResult after;
  EXPECT_TRUE(WaitFor(
      [&] {
        after = c.Baton({"submit", "-q", "--gpus", "0", "--timeout", "10s", "--", "sleep", "1"});
        return after.exit_code == 0;
      },
      std::chrono::seconds(60)))
      << after.err;
  ASSERT_TRUE(c.WaitForReadyNodes(1, std::chrono::seconds(30)));
  EXPECT_EQ(c.RunningJobsChanged(), "") << "the job was restarted after quorum returned";
}

}  // namespace
}  // namespace baton::testing
