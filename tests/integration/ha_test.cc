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
  ASSERT_GE(r.failover_s, 0) << "no submit was acknowledged after the leader's kill";
  EXPECT_GT(r.acked_before_kill, 0u);
  EXPECT_NE(r.new_leader, r.old_leader);
  EXPECT_GE(r.new_leader, 0);
  EXPECT_EQ(r.lost, 0u) << r.detail;
  EXPECT_EQ(r.duplicates, 0u) << r.detail;
  EXPECT_EQ(r.restarted, 0u) << r.detail;
  std::cerr << "acknowledged " << r.acked << " submits (" << r.acked_before_kill
            << " before the kill), " << r.failed << " failed; failover " << r.failover_s
            << " s\n";
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
        refused = c.Baton({"nodes", "--coordinator", c.ReplicaAddress(leader), "--timeout", "2s"},
                          kRoot);
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

}  // namespace
}  // namespace baton::testing
