// The HA pieces against a real etcd (tests/util/etcd.h): the fenced log, the election,
// a replica's join checks, a standby following the log into its own RocksDB, and the
// committer's order (log, then store, then the reply).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "coordinator/committer.h"
#include "coordinator/ha/batch_codec.h"
#include "coordinator/ha/election.h"
#include "coordinator/ha/ha_metrics.h"
#include "coordinator/ha/replica.h"
#include "coordinator/ha/replicated_log.h"
#include "coordinator/ha/snapshot.h"
#include "coordinator/ha/standby_service.h"
#include "gtest/gtest.h"
#include "tests/coordinator/write_backup.h"
#include "tests/util/etcd.h"
#include "tests/util/metric_names.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

using ha::EtcdClient;
using ha::HaKeys;
using ha::ReplicatedLog;

class HaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = std::make_unique<EtcdCluster>(1);
    if (!etcd_->ok()) GTEST_SKIP() << etcd_->why();
    ha::EtcdOptions o;
    o.endpoints = {etcd_->endpoint(0)};
    auto c = EtcdClient::Create(o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }
  std::unique_ptr<ha::Election> Elect(const std::string& name,
                                      absl::Duration ttl = absl::Seconds(2)) {
    v1::HaMember m;
    m.set_name(name);
    m.set_address(name + ":7070");
    auto e = ha::Election::Start(client_.get(), HaKeys("/t"), m, ttl, RealClock::Get());
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }
  ha::ReplicaOptions ReplicaOpts(const std::string& name) {
    ha::ReplicaOptions o;
    o.etcd.endpoints = {etcd_->endpoint(0)};
    o.prefix = "/t";
    o.ttl = absl::Seconds(2);
    o.name = name;
    o.address = name + ":7070";
    o.poll = absl::Milliseconds(10);
    return o;
  }

  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<EtcdClient> client_;
  TempDir dir_;
};

StoreBatch JobBatch(uint64_t id, const std::string& name = "") {
  StoreBatch b;
  v1::Job j;
  j.set_id(id);
  j.set_state(v1::JOB_STATE_PENDING);
  j.mutable_spec()->set_name(name.empty() ? "job" + std::to_string(id) : name);
  j.mutable_spec()->add_command("true");
  b.jobs.push_back(j);
  b.next_job_id = id + 1;
  return b;
}

TEST(HaBatchCodec, EveryPartOfABatchComesBack) {
  StoreBatch b = JobBatch(7);
  v1::Event ev;
  ev.set_job_id(7);
  ev.set_seq(1);
  b.events.push_back(ev);
  ev.set_log_seq(9);
  b.log.push_back(ev);
  v1::Node n;
  n.set_name("n1");
  b.nodes.push_back(n);
  b.policy.emplace().set_version(3);
  b.usage.emplace().set_as_of_ms(5);
  v1::StoredToken t;
  t.set_id("ab");
  b.tokens.push_back(t);
  v1::StoredExecSecret s;
  s.set_job_id(7);
  s.set_secret("x");
  b.secrets.push_back(s);
  b.deleted_jobs = {2, 3};
  auto back = ha::DecodeBatch(ha::EncodeBatch(b));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->jobs.size(), 1u);
  EXPECT_EQ(back->jobs[0].spec().name(), "job7");
  EXPECT_EQ(back->events.size(), 1u);
  EXPECT_EQ(back->log[0].log_seq(), 9u);
  EXPECT_EQ(back->nodes[0].name(), "n1");
  EXPECT_EQ(back->next_job_id, 8u);
  ASSERT_TRUE(back->policy.has_value());
  EXPECT_EQ(back->policy->version(), 3u);
  ASSERT_TRUE(back->usage.has_value());
  EXPECT_EQ(back->tokens[0].id(), "ab");
  EXPECT_EQ(back->secrets[0].secret(), "x");
  EXPECT_EQ(back->deleted_jobs, (std::vector<uint64_t>{2, 3}));
  // Absent optional parts stay absent.
  auto bare = ha::DecodeBatch(ha::EncodeBatch(JobBatch(1)));
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->policy.has_value());
  EXPECT_FALSE(bare->usage.has_value());
  EXPECT_FALSE(ha::DecodeBatch("\xff\xff\xff").ok());
}

TEST_F(HaTest, OneLeaderAtATimeAndTheNextHasAHigherEpoch) {
  auto a = Elect("a");
  auto b = Elect("b");
  auto won_a = a->Campaign();
  ASSERT_TRUE(won_a.ok() && won_a->has_value()) << won_a.status();
  auto won_b = b->Campaign();
  ASSERT_TRUE(won_b.ok()) << won_b.status();
  EXPECT_FALSE(won_b->has_value()) << "two leaders";
  auto leader = b->Leader();
  ASSERT_TRUE(leader.ok());
  EXPECT_EQ(leader->member.name(), "a");
  EXPECT_EQ(leader->epoch, **won_a);
  a.reset();  // revokes the lease: the key goes at once
  won_b = b->Campaign();
  ASSERT_TRUE(won_b.ok() && won_b->has_value()) << won_b.status();
  EXPECT_GT(**won_b, **won_a);
}

TEST_F(HaTest, ADeposedLeadersAppendIsRefused) {
  ReplicatedLog log(client_.get(), HaKeys("/t"));
  auto a = Elect("a");
  uint64_t epoch_a = **a->Campaign();
  absl::Time deadline = absl::Now() + absl::Seconds(2);
  ASSERT_TRUE(log.Append(1, epoch_a, "one", deadline).ok());
  ASSERT_TRUE(a->Resign(epoch_a).ok());
  auto b = Elect("b");
  uint64_t epoch_b = **b->Campaign();
  absl::Status stale = log.Append(2, epoch_a, "stale", deadline);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_NE(stale.message().find("deposed"), std::string_view::npos) << stale;
  ASSERT_TRUE(log.Append(2, epoch_b, "two", deadline).ok());
  auto read = log.Read(1, 10);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].batch, "one");
  EXPECT_EQ((*read)[1].batch, "two");
  EXPECT_EQ((*read)[1].epoch, epoch_b);
}

TEST_F(HaTest, ARetriedAppendLandsOnceAndAnIndexHoldsOneEntry) {
  ReplicatedLog log(client_.get(), HaKeys("/t"));
  auto a = Elect("a");
  uint64_t epoch = **a->Campaign();
  absl::Time deadline = absl::Now() + absl::Seconds(2);
  ASSERT_TRUE(log.Append(1, epoch, "x", deadline).ok());
  // The same append again (its first answer lost): found, OK, not written twice.
  ASSERT_TRUE(log.Append(1, epoch, "x", deadline).ok());
  absl::Status other = log.Append(1, epoch, "y", deadline);
  EXPECT_TRUE(absl::IsFailedPrecondition(other)) << other;
  auto read = log.Read(1, 10);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].batch, "x");
  EXPECT_EQ(*log.LastIndex(), 1u);
}

TEST_F(HaTest, ABatchLargerThanAChunkIsReadWholeAndLeftoversAreIgnored) {
  ReplicatedLog log(client_.get(), HaKeys("/t"), /*chunk_bytes=*/1000);
  auto a = Elect("a");
  uint64_t epoch_a = **a->Campaign();
  std::string big(10'500, 'q');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  ASSERT_TRUE(log.Append(1, epoch_a, big, deadline).ok());
  // A deposed leader's chunks at the next index (its entry never landed) are not read
  // with the entry the next leader writes there.
  ReplicatedLog small(client_.get(), HaKeys("/t"), /*chunk_bytes=*/100);
  ASSERT_TRUE(client_->Put(HaKeys("/t").chunk(2, epoch_a, 0), "junk").ok());
  ASSERT_TRUE(a->Resign(epoch_a).ok());
  auto b = Elect("b");
  uint64_t epoch_b = **b->Campaign();
  ASSERT_TRUE(small.Append(2, epoch_b, std::string(250, 'z'), deadline).ok());
  auto read = log.Read(1, 10);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].batch, big);
  EXPECT_EQ((*read)[1].batch, std::string(250, 'z'));
}

TEST_F(HaTest, TruncatedEntriesAreOutOfRangeForAReader) {
  ReplicatedLog log(client_.get(), HaKeys("/t"));
  auto a = Elect("a");
  uint64_t epoch = **a->Campaign();
  absl::Time deadline = absl::Now() + absl::Seconds(5);
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE(log.Append(i, epoch, "e", deadline).ok());
  ASSERT_TRUE(log.Truncate(4, epoch).ok());
  EXPECT_EQ(*log.FirstIndex(), 4u);
  auto behind = log.Read(2, 10);
  EXPECT_TRUE(absl::IsOutOfRange(behind.status())) << behind.status();
  auto kept = log.Read(4, 10);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->size(), 2u);
  auto tail = log.Read(6, 10);  // the next entry to be written: nothing yet, no error
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_TRUE(tail->empty());
  EXPECT_TRUE(absl::IsFailedPrecondition(log.Truncate(5, epoch + 1)));
}

TEST_F(HaTest, AStandbyFollowsTheLogIntoItsStoreAndTakesOverWarm) {
  auto store_a = Store::Open(dir_.Sub("a"), {});
  auto store_b = Store::Open(dir_.Sub("b"), {});
  ASSERT_TRUE(store_a.ok() && store_b.ok());
  auto a = ha::Replica::Join(ReplicaOpts("a"), store_a->get(), RealClock::Get());
  ASSERT_TRUE(a.ok()) << a.status();
  auto epoch_a = (*a)->FollowUntilLeading([] { return false; });
  ASSERT_TRUE(epoch_a.ok()) << epoch_a.status();
  auto b = ha::Replica::Join(ReplicaOpts("b"), store_b->get(), RealClock::Get());
  ASSERT_TRUE(b.ok()) << b.status();
  std::atomic<bool> stop{false};
  absl::StatusOr<uint64_t> epoch_b = absl::UnknownError("not run");
  std::thread follower([&] { epoch_b = (*b)->FollowUntilLeading([&] { return stop.load(); }); });
  {
    // The leader's path: log, then store (what the Committer does).
    Committer committer(store_a->get(), nullptr, DiskSpace{0, 0}, a->get());
    for (uint64_t id = 1; id <= 3; ++id) committer.Enqueue(JobBatch(id), nullptr);
    committer.Flush();
  }
  EXPECT_TRUE(WaitFor([&] { return (*b)->applied() >= 1 && (*b)->applied() == (*a)->applied(); },
                      std::chrono::seconds(10)));
  // The standby learns who leads after it has read what there was to read: on its next poll.
  EXPECT_TRUE(
      WaitFor([&] { return (*b)->last_leader().member.name() == "a"; }, std::chrono::seconds(10)));
  auto job = (*store_b)->ReadJob(3, false);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().name(), "job3");
  EXPECT_EQ((*b)->last_leader().member.name(), "a");
  EXPECT_NE(ha::StandbyService::Refusal("b", (*b)->last_leader()).find("a:7070"),
            std::string::npos);
  ha::HaMetrics metrics_b(b->get());
  EXPECT_EQ(CheckMetricList(metrics_b.Collect(), HaReplicaMetricList(), /*all=*/true), "");
  EXPECT_EQ(metrics_b.Collect()[0].metric[0].gauge.value, 0) << "a standby says it leads";
  // The leader goes (its lease revoked): the standby leads with everything applied.
  uint64_t applied = (*a)->applied();
  a->reset();
  follower.join();
  ASSERT_TRUE(epoch_b.ok()) << epoch_b.status();
  EXPECT_GT(*epoch_b, *epoch_a);
  EXPECT_EQ((*b)->applied(), applied);
  auto families = metrics_b.Collect();
  EXPECT_EQ(families[0].metric[0].gauge.value, 1);  // baton_ha_leader
  EXPECT_EQ(families[1].metric[0].gauge.value, static_cast<double>(*epoch_b));
  EXPECT_EQ(families[4].metric[0].counter.value, 1);  // one leadership change seen
  auto state = (*store_b)->ReadHaState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->applied, applied);
  auto snap = (*store_b)->Load();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->jobs.size(), 3u);
  EXPECT_EQ(snap->next_job_id, 4u);
  // The new leader appends after the old one's entries.
  auto index = (*b)->Append(JobBatch(4));
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, applied + 1);
}

TEST_F(HaTest, JoinRefusesADataDirOfAnotherClusterOrWithStateOfItsOwn) {
  auto store_a = Store::Open(dir_.Sub("a"), {});
  ASSERT_TRUE(store_a.ok());
  ASSERT_TRUE(ha::Replica::Join(ReplicaOpts("a"), store_a->get(), RealClock::Get()).ok());
  // A data dir that belongs to another cluster.
  auto other = Store::Open(dir_.Sub("other"), {});
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->WriteHaState({"0123456789abcdef0123456789abcdef", 9}).ok());
  auto refused = ha::Replica::Join(ReplicaOpts("o"), other->get(), RealClock::Get());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("belongs to cluster"), std::string_view::npos);
  // A single-node data dir with jobs of its own, pointed at a prefix that holds a log.
  auto single = Store::Open(dir_.Sub("single"), {});
  ASSERT_TRUE(single.ok());
  ASSERT_TRUE((*single)->Commit(JobBatch(1)).ok());
  refused = ha::Replica::Join(ReplicaOpts("s"), single->get(), RealClock::Get());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("state of its own"), std::string_view::npos);
  // The same data dir on a prefix of its own seeds a new cluster, and keeps its jobs; an
  // empty data dir joins that seeded log but must start from a snapshot (the log does not
  // hold the seed): it never follows the log from nothing, nor campaigns.
  ha::ReplicaOptions own = ReplicaOpts("s");
  own.prefix = "/seeded";
  auto seeded = ha::Replica::Join(own, single->get(), RealClock::Get());
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  EXPECT_TRUE((*single)->ReadJob(1, false).ok());
  auto empty = Store::Open(dir_.Sub("empty"), {});
  ASSERT_TRUE(empty.ok());
  ha::ReplicaOptions joiner = ReplicaOpts("e");
  joiner.prefix = "/seeded";
  seeded->reset();  // nobody leads: a joiner that could campaign would
  auto joined = ha::Replica::Join(joiner, empty->get(), RealClock::Get());
  ASSERT_TRUE(joined.ok()) << joined.status();
  int polls = 0;
  auto follow = (*joined)->FollowUntilLeading([&] { return ++polls > 20; });
  EXPECT_TRUE(absl::IsOutOfRange(follow.status())) << follow.status();
  EXPECT_NE(follow.status().message().find("snapshot"), std::string_view::npos);
  EXPECT_EQ((*joined)->epoch(), 0u);
  auto state = (*empty)->ReadHaState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->cluster_id, "") << "an empty replica recorded a cluster it holds no state of";
}

TEST(HaEtcdAccess, OnlyACertificateFromEtcdsOwnCaGetsIn) {
  EtcdCluster etcd(1, /*tls=*/true);
  if (!etcd.ok()) GTEST_SKIP() << etcd.why();
  const std::string pki = etcd.pki_dir();
  auto range = [&](const ha::EtcdOptions& o) -> absl::Status {
    auto c = EtcdClient::Create(o);
    if (!c.ok()) return c.status();
    etcdserverpb::RangeRequest req;
    req.set_key("/baton/cluster");
    return (*c)->Range(req).status();
  };
  ha::EtcdOptions coordinator;
  coordinator.endpoints = {etcd.endpoint(0)};
  coordinator.ca_file = pki + "/ca.crt";
  coordinator.cert_file = pki + "/coordinator.crt";
  coordinator.key_file = pki + "/coordinator.key";
  coordinator.timeout = absl::Seconds(3);
  ASSERT_TRUE(range(coordinator).ok()) << range(coordinator);
  // The cluster CA's certificates: a node's, and even a coordinator's (the O field that
  // baton reads means nothing to etcd; the CA is what keeps them out).
  TempDir cluster;
  std::string certs = std::string(BATON_SOURCE_DIR) + "/scripts/certs.sh";
  for (std::vector<std::string> step : {std::vector<std::string>{certs, cluster.path(), "ca"},
                                        {certs, cluster.path(), "node", "n1"},
                                        {certs, cluster.path(), "coordinator"}}) {
    ASSERT_EQ(RunProcess(step, {}).exit_code, 0);
  }
  for (const std::string& who : {std::string("node-n1"), std::string("coordinator")}) {
    ha::EtcdOptions o = coordinator;
    o.cert_file = cluster.Sub(who + ".crt");
    o.key_file = cluster.Sub(who + ".key");
    EXPECT_FALSE(range(o).ok()) << "etcd let in the cluster CA's " << who << " certificate";
  }
  // A person: TLS without a client certificate.
  CommandResult person = RunProcess(
      {"/usr/bin/etcdctl", "--endpoints", etcd.endpoint(0), "--cacert=" + pki + "/ca.crt",
       "--command-timeout", "2s", "get", "/baton/cluster"},
      {{"ETCDCTL_API", "3"}}, std::chrono::seconds(10));
  EXPECT_NE(person.exit_code, 0) << "etcd served a client without a certificate";
  // Plaintext to the TLS port.
  ha::EtcdOptions plain;
  plain.endpoints = {"http://" + etcd.endpoint(0).substr(std::string("https://").size())};
  plain.timeout = absl::Seconds(2);
  EXPECT_FALSE(range(plain).ok()) << "etcd served plaintext";
  // And plaintext is not even tried off loopback.
  plain.endpoints = {"http://10.1.2.3:2379"};
  EXPECT_TRUE(absl::IsInvalidArgument(ha::CheckEtcdOptions(plain)));
}

// A log that refuses every append, as a deposed leader's does.
class RefusingLog : public CommitLog {
 public:
  explicit RefusingLog(std::string marker) : marker_(std::move(marker)) {}
  absl::StatusOr<uint64_t> Append(const StoreBatch&) override {
    return absl::FailedPreconditionError("deposed");
  }
  [[noreturn]] void Lost(const absl::Status&) override {
    int fd = open(marker_.c_str(), O_CREAT | O_WRONLY, 0644);
    close(fd);
    _exit(75);
  }

 private:
  std::string marker_;
};

TEST(HaCommitter, ARefusedAppendEndsLeadershipBeforeTheStoreOrTheReply) {
  TempDir dir;
  std::string lost = dir.Sub("lost"), acked = dir.Sub("acked");
  EXPECT_EXIT(
      {
        auto store = Store::Open(dir.Sub("db"), {});
        RefusingLog log(lost);
        Committer committer(store->get(), nullptr, DiskSpace{0, 0}, &log);
        committer.Enqueue(JobBatch(1),
                          [&] { close(open(acked.c_str(), O_CREAT | O_WRONLY, 0644)); });
        committer.Flush();
      },
      ::testing::ExitedWithCode(75), "");
  EXPECT_EQ(access(lost.c_str(), F_OK), 0) << "Lost was not called";
  EXPECT_NE(access(acked.c_str(), F_OK), 0) << "a change the log refused was acknowledged";
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(absl::IsNotFound((*store)->ReadJob(1, false).status()))
      << "a change the log refused reached the store";
}

// A standby's snapshot install: the data dir becomes the leader's store (its jobs and
// HA state), leftovers of an interrupted fetch or install go; a snapshot that does not
// check leaves the old data dir as it was.
TEST(HaSnapshotInstall, ASnapshotReplacesTheDataDirAndAFailedOneLeavesItAlone) {
  TempDir dir;
  const std::string data = dir.Sub("c1");
  {
    auto old = Store::Open(data, {});
    ASSERT_TRUE(old.ok());
    ASSERT_TRUE((*old)->Commit(JobBatch(1, "old")).ok());
    ASSERT_TRUE((*old)->WriteHaState({"0123456789abcdef0123456789abcdef", 5}).ok());
  }
  auto leader = Store::Open(dir.Sub("leader"), {});
  ASSERT_TRUE(leader.ok());
  ASSERT_TRUE((*leader)->Commit(JobBatch(1, "one")).ok());
  ASSERT_TRUE((*leader)->Commit(JobBatch(2, "two")).ok());
  ASSERT_TRUE((*leader)->WriteHaState({"0123456789abcdef0123456789abcdef", 9}).ok());

  // A snapshot whose file does not match its manifest: nothing changes.
  const std::string bad = dir.Sub("c1.snapshot-1");
  ASSERT_TRUE(WriteBackup(**leader, bad).ok());
  for (const auto& f : std::filesystem::directory_iterator(bad)) {
    if (f.path().filename() != kBackupManifestName) {
      std::ofstream(f.path(), std::ios::app) << "x";
      break;
    }
  }
  absl::Status failed = ha::InstallSnapshot(bad, data);
  EXPECT_EQ(failed.code(), absl::StatusCode::kDataLoss) << failed;
  {
    auto kept = Store::Open(data, {});
    ASSERT_TRUE(kept.ok()) << kept.status();
    auto state = (*kept)->ReadHaState();
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->applied, 5u) << "a failed install touched the data dir";
    auto job = (*kept)->ReadJob(1, false);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->spec().name(), "old");
  }

  // Leftovers of an interrupted fetch and install sit beside it; a good snapshot goes in.
  ASSERT_TRUE(std::filesystem::create_directories(dir.Sub("c1.behind-77/x")));
  const std::string good = dir.Sub("c1.snapshot-2");
  ASSERT_TRUE(WriteBackup(**leader, good).ok());
  ASSERT_TRUE(std::filesystem::create_directories(dir.Sub("c10.snapshot-3")));  // not c1's
  absl::Status installed = ha::InstallSnapshot(good, data);
  ASSERT_TRUE(installed.ok()) << installed;
  auto now = Store::Open(data, {});
  ASSERT_TRUE(now.ok()) << now.status();
  auto state = (*now)->ReadHaState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->applied, 9u);
  auto two = (*now)->ReadJob(2, false);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->spec().name(), "two");
  for (const char* gone : {"c1.snapshot-1", "c1.snapshot-2", "c1.behind-77"}) {
    EXPECT_FALSE(std::filesystem::exists(dir.Sub(gone))) << gone << " was left behind";
  }
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("c10.snapshot-3"))) << "another replica's removed";
}

}  // namespace
}  // namespace baton::testing
