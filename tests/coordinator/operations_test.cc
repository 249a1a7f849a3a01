// Operators' tools on a real store: draining nodes (no new work; with evict, jobs
// checkpoint and move with no cooldown and no eviction counted), and backups (a RocksDB
// checkpoint taken while commits run, written as files with a manifest, verified and
// restored into an empty data dir — never over live data, never half).
#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "common/backup_dir.h"
#include "coordinator/backup.h"
#include "tests/coordinator/harness.h"
#include "tests/coordinator/write_backup.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

absl::StatusOr<v1::Node> Drain(Harness& h, const std::string& node, bool evict,
                               const Caller& who = Admin(), const std::string& reason = "") {
  v1::DrainNodeRequest req;
  req.set_node(node);
  req.set_evict(evict);
  req.set_reason(reason);
  std::promise<absl::StatusOr<v1::Node>> p;
  h.jm().DrainNode(who, req, [&](absl::StatusOr<v1::Node> n) { p.set_value(std::move(n)); });
  auto out = p.get_future().get();
  h.jm().Flush();
  return out;
}

absl::StatusOr<v1::Node> Undrain(Harness& h, const std::string& node) {
  std::promise<absl::StatusOr<v1::Node>> p;
  h.jm().UndrainNode(Admin(), node, [&](absl::StatusOr<v1::Node> n) { p.set_value(std::move(n)); });
  auto out = p.get_future().get();
  h.jm().Flush();
  return out;
}

std::string PlacedOn(const v1::Job& job) {
  if (job.attempts_size() == 0 || job.attempts().rbegin()->placement_size() == 0) return "";
  return job.attempts().rbegin()->placement(0).node();
}

v1::Node NodeNamed(Harness& h, const std::string& name) {
  for (const auto& n : h.jm().ListNodes()) {
    if (n.name() == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return {};
}

TEST(Drain, ADrainedNodeTakesNoNewWorkUntilUndrained) {
  Harness h;
  h.Connect("n1", /*gpus=*/2);
  h.Connect("n2", /*gpus=*/2);
  auto drained = Drain(h, "n1", /*evict=*/false, Admin(), "bad DIMM");
  ASSERT_TRUE(drained.ok()) << drained.status();
  EXPECT_EQ(drained->drain().by(), "root");
  EXPECT_EQ(drained->drain().reason(), "bad DIMM");
  EXPECT_GT(drained->drain().since_ms(), 0);

  auto a = h.Submit(Spec(1, 2));
  auto b = h.Submit(Spec(1, 2));
  h.Schedule();
  EXPECT_EQ(PlacedOn(h.Get(*a)), "n2");
  EXPECT_EQ(h.State(*b), v1::JOB_STATE_PENDING) << "n1 is free but drained";
  auto why = h.jm().Explain(*b);
  ASSERT_TRUE(why.ok());
  EXPECT_NE(why->text().find("node n1 is drained (by root: bad DIMM)"), std::string::npos)
      << why->text();

  ASSERT_TRUE(Undrain(h, "n1").ok());
  EXPECT_FALSE(NodeNamed(h, "n1").has_drain());
  h.Schedule();
  EXPECT_EQ(h.State(*b), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(PlacedOn(h.Get(*b)), "n1");
}

TEST(Drain, WithEvictItsJobsCheckpointAndMoveWithNoCooldownAndNoEvictionCounted) {
  JobManagerOptions opts = TestOptions();
  for (auto& c : opts.policy.classes) c.cooldown_base_s = 600;  // would show if applied
  Harness h(opts);
  h.Connect("n1", /*gpus=*/2);
  v1::JobSpec training = Spec(1, 2);
  training.set_grace_seconds(20);
  auto train = h.Submit(training);
  h.Schedule();
  ASSERT_EQ(PlacedOn(h.Get(*train)), "n1");
  v1::AttemptReport progress = Report(*train, 1, Phase::PHASE_RUNNING);
  progress.set_checkpoint_step(40);
  h.Report("n1", progress);
  h.Connect("n2", /*gpus=*/2);
  h.Commands("n1");

  ASSERT_TRUE(Drain(h, "n1", /*evict=*/true).ok());
  EXPECT_EQ(h.State(*train), v1::JOB_STATE_PREEMPTING);
  std::vector<v1::CoordinatorCommand> cmds = h.Commands("n1");
  ASSERT_EQ(cmds.size(), 1u);
  ASSERT_TRUE(cmds[0].has_preempt());
  EXPECT_EQ(cmds[0].preempt().deadline_ms(), h.clock().NowMs() + 20'000) << "its grace";
  EXPECT_NE(cmds[0].preempt().reason().find("drained by root"), std::string::npos)
      << cmds[0].preempt().reason();
  EXPECT_EQ(h.Get(*train).attempts(0).drained_node(), "n1");

  v1::AttemptReport done = Report(*train, 1, Phase::PHASE_EXITED);
  done.set_checkpoint_step(42);
  h.Report("n1", done);
  v1::Job job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING) << "no cooldown after a drain";
  EXPECT_EQ(job.evictions(), 0u) << "a drain is not counted against the job";
  EXPECT_NE(job.attempts(0).end_reason().find("resumes from step 42"), std::string::npos)
      << job.attempts(0).end_reason();
  h.Schedule();
  job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SCHEDULED);
  EXPECT_EQ(PlacedOn(job), "n2") << "moved off the drained node";
}

TEST(Drain, SurvivesAgentReconnectsAndCoordinatorRestarts) {
  Harness h;
  h.Connect("n1", /*gpus=*/2);
  ASSERT_TRUE(Drain(h, "n1", false).ok());
  h.Connect("n1", /*gpus=*/2);  // the agent restarts and registers again
  EXPECT_TRUE(NodeNamed(h, "n1").has_drain());
  h.Restart();
  EXPECT_TRUE(NodeNamed(h, "n1").has_drain());
  h.Connect("n1", /*gpus=*/2);
  auto job = h.Submit(Spec(1, 1));
  h.Schedule();
  EXPECT_EQ(h.State(*job), v1::JOB_STATE_PENDING);
}

TEST(Drain, AnEvictionInProgressSurvivesACoordinatorRestartAsADrain) {
  Harness h;
  h.Connect("n1", /*gpus=*/2);
  auto train = h.Submit(Spec(1, 2));
  h.Schedule();
  h.Report("n1", Report(*train, 1, Phase::PHASE_RUNNING));
  h.Connect("n2", /*gpus=*/2);
  ASSERT_TRUE(Drain(h, "n1", true).ok());
  h.Restart();
  h.Connect("n1", /*gpus=*/2, [&] {
    v1::Register reg = Registration("n1", 2);
    *reg.add_attempts() = Report(*train, 1, Phase::PHASE_RUNNING);
    return reg;
  }());
  h.Report("n1", Report(*train, 1, Phase::PHASE_EXITED));
  v1::Job job = h.Get(*train);
  EXPECT_EQ(job.state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(job.evictions(), 0u);
}

TEST(Drain, RefusesUnknownNodesAndLongReasons) {
  Harness h;
  h.Connect("n1");
  auto unknown = Drain(h, "n9", false);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("n9"), std::string::npos);
  auto long_reason = Drain(h, "n1", false, Admin(), std::string(600, 'x'));
  EXPECT_EQ(long_reason.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(NodeNamed(h, "n1").has_drain()) << "nothing changed";
  EXPECT_EQ(Undrain(h, "n9").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Undrain(h, "n1").ok()) << "undraining a node in service is a no-op";
}

// --- backups ------------------------------------------------------------------------------

v1::Job JobRecord(uint64_t id) {
  v1::Job job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_PENDING);
  job.mutable_spec()->set_name("job-" + std::to_string(id));
  job.mutable_spec()->add_command("true");
  return job;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(Backup, HoldsEveryCommitAcknowledgedBeforeItWhileCommitsContinue) {
  TempDir dir;
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  std::atomic<uint64_t> acked{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t id = 1; !stop; ++id) {
      StoreBatch b;
      b.jobs.push_back(JobRecord(id));
      b.next_job_id = id + 1;
      ASSERT_TRUE((*store)->Commit(b).ok());
      acked = id;
    }
  });
  while (acked < 200) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const uint64_t before = acked;
  ASSERT_TRUE(WriteBackup(**store, dir.Sub("backup")).ok());
  while (acked < before + 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  writer.join();

  auto restored = RestoreStore(dir.Sub("backup"), dir.Sub("restored"));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_GE(restored->jobs, before);
  EXPECT_EQ(restored->unfinished, restored->jobs);
  EXPECT_EQ(restored->next_job_id, restored->jobs + 1);
  auto copy = Store::Open(dir.Sub("restored"), {});
  ASSERT_TRUE(copy.ok());
  auto snap = (*copy)->Load();
  ASSERT_TRUE(snap.ok());
  std::set<uint64_t> ids;
  for (const auto& j : snap->jobs) ids.insert(j.id());
  for (uint64_t id = 1; id <= before; ++id) ASSERT_TRUE(ids.count(id)) << "job " << id;
  EXPECT_EQ(snap->jobs[0].spec().name(), "job-1");
}

class RestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(dir_.Sub("db"), {});
    ASSERT_TRUE(store.ok());
    StoreBatch b;
    for (uint64_t id = 1; id <= 5; ++id) b.jobs.push_back(JobRecord(id));
    b.jobs[0].set_state(v1::JOB_STATE_SUCCEEDED);
    b.next_job_id = 6;
    ASSERT_TRUE((*store)->Commit(b).ok());
    ASSERT_TRUE(WriteBackup(**store, backup()).ok());
  }
  std::string backup() const { return dir_.Sub("backup"); }
  std::string AnSst() const {
    for (const auto& e : std::filesystem::directory_iterator(backup())) {
      if (e.path().extension() == ".sst") return e.path().string();
    }
    return "";
  }
  TempDir dir_;
};

TEST_F(RestoreTest, RestoresIntoAnAbsentOrEmptyDataDir) {
  auto r = RestoreStore(backup(), dir_.Sub("new"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs, 5u);
  EXPECT_EQ(r->unfinished, 4u);
  EXPECT_EQ(r->next_job_id, 6u);
  std::filesystem::create_directory(dir_.Sub("empty"));
  EXPECT_TRUE(RestoreStore(backup(), dir_.Sub("empty")).ok());
}

TEST_F(RestoreTest, NeverOverwritesAnExistingDataDir) {
  std::filesystem::create_directory(dir_.Sub("live"));
  std::ofstream(dir_.Sub("live/CURRENT")) << "live data";
  auto r = RestoreStore(backup(), dir_.Sub("live"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("not empty"), std::string::npos) << r.status();
  EXPECT_EQ(ReadAll(dir_.Sub("live/CURRENT")), "live data");
}

TEST_F(RestoreTest, RefusesADamagedBackupNamingTheFileAndLeavesNothing) {
  std::string sst = AnSst();
  ASSERT_FALSE(sst.empty());
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x5a');
  }
  auto r = RestoreStore(backup(), dir_.Sub("new"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find(std::filesystem::path(sst).filename().string()),
            std::string::npos)
      << r.status();
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("new")));
}

TEST_F(RestoreTest, RefusesMissingExtraOrTruncatedFiles) {
  std::ofstream(backup() + "/EXTRA") << "x";
  auto extra = RestoreStore(backup(), dir_.Sub("a"));
  EXPECT_EQ(extra.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(extra.status().message().find("EXTRA"), std::string::npos) << extra.status();
  std::filesystem::remove(backup() + "/EXTRA");
  std::filesystem::resize_file(AnSst(), 3);
  EXPECT_EQ(RestoreStore(backup(), dir_.Sub("b")).status().code(), absl::StatusCode::kDataLoss);
  std::filesystem::remove(AnSst());
  EXPECT_EQ(RestoreStore(backup(), dir_.Sub("c")).status().code(), absl::StatusCode::kDataLoss);
  std::filesystem::remove(backup() + "/" + kBackupManifestName);
  EXPECT_EQ(RestoreStore(backup(), dir_.Sub("d")).status().code(), absl::StatusCode::kNotFound);
}

TEST(BackupWriter, RefusesAStreamThatBreaksTheProtocolAndLeavesNothing) {
  TempDir dir;
  auto chunk = [](const std::string& file, uint64_t off, const std::string& data) {
    v1::BackupChunk c;
    c.set_file(file);
    c.set_offset(off);
    c.set_data(data);
    return c;
  };
  {
    auto w = BackupWriter::Start(dir.Sub("gap"));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Add(chunk("a", 0, "abc")).ok());
    EXPECT_EQ(w->Add(chunk("a", 4, "d")).code(), absl::StatusCode::kDataLoss);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("gap")));
  for (std::string bad :
       std::vector<std::string>{"../x", "a/b", "..", "", kBackupManifestName, "a\nb"}) {
    auto w = BackupWriter::Start(dir.Sub("names"));
    ASSERT_TRUE(w.ok());
    EXPECT_EQ(w->Add(chunk(bad, 0, "x")).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  {
    auto w = BackupWriter::Start(dir.Sub("twice"));
    ASSERT_TRUE(w->Add(chunk("a", 0, "x")).ok());
    ASSERT_TRUE(w->Add(chunk("b", 0, "y")).ok());
    EXPECT_EQ(w->Add(chunk("a", 0, "x")).code(), absl::StatusCode::kDataLoss);
  }
  {
    auto w = BackupWriter::Start(dir.Sub("mismatch"));
    ASSERT_TRUE(w->Add(chunk("a", 0, "xyz")).ok());
    v1::BackupManifest m;
    auto* f = m.add_files();
    f->set_name("a");
    f->set_size(3);
    f->set_sha256(std::string(64, '0'));
    EXPECT_EQ(w->Finish(m).code(), absl::StatusCode::kDataLoss);
    v1::BackupManifest more = m;
    more.add_files()->set_name("b");
    EXPECT_EQ(w->Finish(more).code(), absl::StatusCode::kDataLoss);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("mismatch")));
  std::filesystem::create_directory(dir.Sub("exists"));
  EXPECT_EQ(BackupWriter::Start(dir.Sub("exists")).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace baton::testing
