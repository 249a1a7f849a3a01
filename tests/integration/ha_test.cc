// Coordinator replicas on etcd (docs/ha.md) as real processes: a leader killed during a
// stream of submits from several threads loses no acknowledged submit, reuses no job id
// and restarts no running job; a leader stopped past its lease steps down, rejoins as a
// standby, and no entry of its epoch follows one of the new leader's in the log.
#include <signal.h>

#include <set>
#include <thread>

#include "common/backup_dir.h"
#include "coordinator/ha/etcd_client.h"
#include "coordinator/ha/replicated_log.h"
#include "coordinator/ha/snapshot.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/ha_cluster.h"
#include "tests/integration/outage_scenario.h"

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
  EXPECT_GT(r.acked_api, 0u) << "no submit through the API was acknowledged";
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
  // The old leader answers until it re-executes (kStepDownExit); then only the new one.
  int next = -1;
  EXPECT_TRUE(WaitFor(
      [&] {
        next = c.Leader(std::chrono::milliseconds(100));
        return next >= 0 && next != leader;
      },
      std::chrono::seconds(10)))
      << next;
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

uint64_t Num(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? std::stoull(j[key].get<std::string>()) : 0;
}

// Waits until replica `i` says it holds the whole log (at least `at_least` entries) and
// the leader's applied index is the same.
bool CaughtUp(HaCluster& c, int i, uint64_t at_least, std::string* last) {
  return WaitFor(
      [&] {
        nlohmann::json r = c.ReplicaStatus(i);
        *last = r.dump();
        uint64_t applied = Num(r, "appliedIndex");
        return applied >= at_least && applied == Num(r, "log_index");
      },
      std::chrono::seconds(40));
}

TEST(HaSnapshot, AStandbyBehindTheLogsWindowRestoresASnapshotAndCatchesUp) {
  HaClusterOptions o;
  o.replicas = 2;
  o.replica_flags = {"--ha-keep-entries", "20"};
  HaCluster c(o);
  if (!c.ok()) GTEST_SKIP() << c.why();
  int leader = c.Leader();
  ASSERT_GE(leader, 0);
  int standby = 1 - leader;
  c.SignalReplica(standby, SIGKILL);
  std::set<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.insert("behind" + std::to_string(i));
    CommandResult r = c.Baton({"submit", "-q", "--gpus", "0", "--name",
                               "behind" + std::to_string(i), "--", "sleep", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // etcd no longer holds the entries the standby needs next.
  nlohmann::json before;
  ASSERT_TRUE(WaitFor(
      [&] {
        before = c.ReplicaStatus(standby);
        return !before.empty() && Num(before, "log_first_index") > Num(before, "appliedIndex") + 1;
      },
      std::chrono::seconds(10)))
      << before.dump();
  uint64_t log_index = Num(before, "log_index");
  c.StartReplica(standby);
  std::string last;
  ASSERT_TRUE(CaughtUp(c, standby, log_index, &last)) << last << "\n" << c.ReplicaLog(standby);
  EXPECT_NE(c.ReplicaLog(standby).find("installed a snapshot"), std::string::npos)
      << c.ReplicaLog(standby);
  // It holds everything: with the old leader gone, it leads and lists every job.
  c.SignalReplica(leader, SIGKILL);
  ASSERT_EQ(c.Leader(), standby) << c.ReplicaLog(standby);
  std::set<std::string> listed;
  for (const auto& [id, name] : ListedJobs(c)) listed.insert(name);
  for (const std::string& n : names) EXPECT_TRUE(listed.count(n)) << n << " is missing";
  EXPECT_EQ(c.Baton({"submit", "-q", "--gpus", "0", "--", "sleep", "1"}).exit_code, 0);
}

TEST(HaSnapshot, AnExistingDataDirTurnedHaKeepsEveryJobAndAnEmptyReplicaStartsFromASnapshot) {
  HaClusterOptions o;
  o.replicas = 2;
  o.seed_jobs = 4;
  HaCluster c(o);
  if (!c.ok()) GTEST_SKIP() << c.why();
  ASSERT_EQ(c.Leader(), 0);
  std::map<uint64_t, std::string> seeded = ListedJobs(c);
  for (int j = 0; j < 4; ++j) {
    bool found = false;
    for (const auto& [id, name] : seeded) found |= name == "seed" + std::to_string(j);
    EXPECT_TRUE(found) << "seed" << j << " did not survive turning HA on";
  }
  CommandResult after = c.Baton({"submit", "-q", "--gpus", "0", "--name", "after", "--", "true"});
  ASSERT_EQ(after.exit_code, 0) << after.err;
  std::string last;
  ASSERT_TRUE(CaughtUp(c, 1, 1, &last)) << last << "\n" << c.ReplicaLog(1);
  EXPECT_NE(c.ReplicaLog(1).find("installed a snapshot"), std::string::npos) << c.ReplicaLog(1);
  c.SignalReplica(0, SIGKILL);
  ASSERT_EQ(c.Leader(), 1) << c.ReplicaLog(1);
  std::map<uint64_t, std::string> listed = ListedJobs(c);
  for (const auto& [id, name] : seeded) {
    EXPECT_EQ(listed[id], name) << "job " << id << " is not the same on the new leader";
  }
  EXPECT_EQ(listed[ClusterClient::SubmittedId(after.out)], "after");
}

TEST(HaSnapshot, OnlyACoordinatorOfTheSameClusterGetsASnapshot) {
  HaCluster c(/*replicas=*/1, /*agents=*/0);
  if (!c.ok()) GTEST_SKIP() << c.why();
  ASSERT_EQ(c.Leader(), 0);
  CommandResult st = c.Baton({"admin", "ha", "status", "--json"}, kRoot);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  std::string cluster = nlohmann::json::parse(st.out).value("clusterId", "");
  ASSERT_FALSE(cluster.empty()) << st.out;
  auto snapshot = [&](const std::string& cert, const std::string& key, const std::string& id,
                      const std::string& dir) {
    auto tls = LoadTls({c.security().ca(), cert, key, false}, /*need_cert=*/false);
    if (!tls.ok()) return tls.status();
    return ha::FetchSnapshot({c.ReplicaAddress(0), *tls, id, "intruder", 0}, c.dir() + "/" + dir);
  };
  const std::string tls_dir = c.dir() + "/tls/";
  // A person (no certificate) and a node (a node's certificate) get nothing.
  absl::Status s = snapshot("", "", cluster, "s1");
  EXPECT_TRUE(absl::IsUnauthenticated(s)) << s;
  auto [node_cert, node_key] = c.security().NodeCert("n9");
  s = snapshot(node_cert, node_key, cluster, "s2");
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  // A coordinator of another cluster neither.
  s = snapshot(tls_dir + "coordinator.crt", tls_dir + "coordinator.key",
               "0123456789abcdef0123456789abcdef", "s3");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  for (const char* d : {"/s1", "/s2", "/s3"}) {
    EXPECT_NE(access((c.dir() + d).c_str(), F_OK), 0) << d << " was left behind";
  }
  // A replica of this one gets a whole, checked store.
  s = snapshot(tls_dir + "coordinator.crt", tls_dir + "coordinator.key", cluster, "s4");
  ASSERT_TRUE(s.ok()) << s;
  auto manifest = VerifyBackupDir(c.dir() + "/s4");
  EXPECT_TRUE(manifest.ok()) << manifest.status();
}

// `baton admin backup` through the replica list is the leader's; restored, it keeps its
// cluster's identity (a second cluster on a fresh prefix is refused) unless restored with
// --new-cluster, which seeds a new replica set with every job.
TEST(HaSnapshot, ABackupOfTheLeaderRestoredWithNewClusterSeedsANewReplicaSet) {
  HaCluster c(/*replicas=*/2, /*agents=*/0);
  if (!c.ok()) GTEST_SKIP() << c.why();
  CommandResult sub = c.Baton({"submit", "-q", "--gpus", "0", "--name", "kept", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const uint64_t job = ClusterClient::SubmittedId(sub.out);
  const std::string backup = c.dir() + "/backup";
  CommandResult b = c.Baton({"admin", "backup", backup}, kRoot);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto start = [&](const std::string& data, int port) {
    std::vector<std::string> argv = {Bin("baton-coordinator"),
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port),
                                     "--data-dir",
                                     data,
                                     "--policy",
                                     c.dir() + "/policy.yaml",
                                     "--ha-etcd",
                                     c.etcd().endpoints(),
                                     "--ha-prefix",
                                     "/restored",
                                     "--ha-name",
                                     "r1"};
    for (auto& f : c.security().CoordinatorFlags()) argv.push_back(f);
    return argv;
  };
  // Kept identity: on a fresh prefix it is refused, naming its cluster.
  const std::string same = c.dir() + "/same";
  CommandResult restored =
      RunProcess({Bin("baton-coordinator"), "restore", backup, "--data-dir", same}, {});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("belongs to HA cluster"), std::string::npos) << restored.out;
  CommandResult refused = RunProcess(start(same, FreePort()), {}, std::chrono::seconds(30));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("belongs to cluster"), std::string::npos) << refused.err;
  // --new-cluster: it seeds a replica set of its own on that prefix, with the job.
  const std::string fresh = c.dir() + "/fresh";
  restored = RunProcess(
      {Bin("baton-coordinator"), "restore", backup, "--data-dir", fresh, "--new-cluster"}, {});
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  EXPECT_NE(restored.out.find("forgot HA cluster"), std::string::npos) << restored.out;
  const int port = FreePort();
  Subprocess seeded(start(fresh, port), {}, c.dir() + "/r1");
  CommandResult got;
  EXPECT_TRUE(WaitFor(
      [&] {
        got = c.Baton({"status", std::to_string(job), "--coordinator",
                       "127.0.0.1:" + std::to_string(port), "--timeout", "2s"},
                      kRoot);
        return got.exit_code == 0;
      },
      std::chrono::seconds(30)))
      << got.err << ReadFile(c.dir() + "/r1.err");
  EXPECT_NE(got.out.find("kept"), std::string::npos) << got.out;
  EXPECT_NE(ReadFile(c.dir() + "/r1.err").find("seeded from this data dir"), std::string::npos);
}

// The namespace cluster with its coordinator as three replicas, each in a namespace of
// its own, on a three-member etcd in namespaces too (BATON_NETNS_HA=3, TLS everywhere):
// the leader is kill -9'ed while a train_mlp gang (2 nodes) and an inference service run.
// A standby leads; the gang trains on in its first attempt to the weights of an
// uninterrupted run and the service keeps its process.
TEST(HaNetns, Kill9OfTheLeaderKeepsATrainingGangAndAServiceOnTheirProcesses) {
  TempDir dir("baton-ha-netns");
  MakeShared(dir.path());
  NetnsCluster cluster(/*nodes=*/3, /*gpus=*/2,
                       TrainingAndServicePolicy(dir.Sub("policy.yaml"), ""), "h",
                       /*ha_replicas=*/3);
  if (!cluster.ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster.why();
  OutageReport r = StartOutageJobs(cluster, dir.path(), /*train_seconds=*/20);
  ASSERT_EQ(r.error, "");
  const int leader = cluster.HaLeader();
  ASSERT_GT(leader, 0);
  r.down_ms = UnixNowMs();
  ASSERT_TRUE(cluster.StopReplica(leader, "KILL"));
  int next = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        next = cluster.HaLeader(std::chrono::milliseconds(100));
        return next > 0 && next != leader;
      },
      std::chrono::seconds(30)))
      << "no standby came to lead";
  r.up_ms = UnixNowMs();
  ASSERT_TRUE(cluster.StartReplica(leader));  // it rejoins as a standby
  FinishOutage(cluster, r, std::chrono::seconds(120));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.jobs_killed, 0) << cluster.Describe(r.training) << cluster.Describe(r.service);
  EXPECT_EQ(r.work_lost_s, 0);
  EXPECT_EQ(r.service_pids, 1) << "the service was restarted";
  EXPECT_EQ(TrainMlpFinalHash(r.training_log), UninterruptedTrainMlpHash(r.training_flags));
  std::cerr << "leader c" << leader << " killed; c" << next << " led "
            << (r.up_ms - r.down_ms) / 1000.0 << " s later (as the CLI saw it)\n";
  EXPECT_EQ(cluster.Baton({"cancel", std::to_string(r.service)}, kRoot).exit_code, 0);
}

}  // namespace
}  // namespace baton::testing
