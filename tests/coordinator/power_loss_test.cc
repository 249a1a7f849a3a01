// Durability that kill -9 cannot fake: the store runs on a FileSystem that forgets
// every byte not synced when the "power" goes. Every submit the JobManager acknowledged
// must be there after the crash — and with sync switched off, the same test must see
// acknowledged submits vanish, proving that it can fail.
#include <future>

#include "coordinator/job_manager.h"
#include "gtest/gtest.h"
#include "rocksdb/env.h"
#include "tests/coordinator/harness.h"
#include "tests/coordinator/power_loss_fs.h"

namespace baton::testing {
namespace {

struct CrashResult {
  size_t acknowledged = 0;
  size_t survived = 0;
  uint64_t bytes_dropped = 0;
};

// Submits `n` jobs from 4 threads (so group commit batches them), crashes, recovers.
CrashResult SubmitThenLosePower(bool sync, int n) {
  TempDir dir;
  auto fs = std::make_shared<PowerLossFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  FakeClock clock;
  std::vector<uint64_t> acked;
  std::mutex mu;
  {
    StoreOptions opts;
    opts.sync = sync;
    opts.env = env.get();
    auto store = Store::Open(dir.Sub("db"), opts);
    EXPECT_TRUE(store.ok()) << store.status();
    JobManager jm(store->get(), &clock, {});
    EXPECT_TRUE(jm.Recover().ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < n / 4; ++i) {
          std::promise<absl::StatusOr<uint64_t>> p;
          jm.Submit(Alice(), Spec(), [&](absl::StatusOr<uint64_t> id) { p.set_value(id); });
          auto id = p.get_future().get();
          if (id.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            acked.push_back(*id);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    fs->Crash();  // the power goes: nothing written from here on reaches the disk
    jm.Stop();
  }  // the store closes on a dead disk
  CrashResult result;
  result.bytes_dropped = fs->DropUnsyncedData();
  result.acknowledged = acked.size();
  auto store = Store::Open(dir.Sub("db"), {});
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return result;
  auto snap = (*store)->Load();
  EXPECT_TRUE(snap.ok()) << snap.status();
  std::set<uint64_t> present;
  for (const auto& j : snap->jobs) present.insert(j.id());
  for (uint64_t id : acked) result.survived += present.count(id);
  return result;
}

TEST(PowerLoss, EveryAcknowledgedSubmitSurvives) {
  CrashResult r = SubmitThenLosePower(/*sync=*/true, /*n=*/400);
  EXPECT_EQ(r.acknowledged, 400u);
  EXPECT_EQ(r.survived, r.acknowledged);
}

TEST(PowerLoss, WithoutSyncAcknowledgedSubmitsAreLost) {
  CrashResult r = SubmitThenLosePower(/*sync=*/false, /*n=*/400);
  EXPECT_EQ(r.acknowledged, 400u);
  EXPECT_GT(r.bytes_dropped, 0u);
  EXPECT_LT(r.survived, r.acknowledged)
      << "the fault-injecting filesystem must catch a store that does not sync";
}

TEST(PowerLoss, TransitionsSurviveWithTheirEvents) {
  TempDir dir;
  auto fs = std::make_shared<PowerLossFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  FakeClock clock;
  uint64_t id = 0;
  {
    StoreOptions opts;
    opts.env = env.get();
    auto store = Store::Open(dir.Sub("db"), opts);
    ASSERT_TRUE(store.ok());
    JobManager jm(store->get(), &clock, {});
    ASSERT_TRUE(jm.Recover().ok());
    auto link = std::make_shared<RecordingLink>();
    ASSERT_TRUE(jm.AgentRegister(Registration("n1"), link).ok());
    std::promise<absl::StatusOr<uint64_t>> p;
    jm.Submit(Alice(), Spec(), [&](absl::StatusOr<uint64_t> r) { p.set_value(r); });
    id = *p.get_future().get();
    jm.SchedulePass();
    jm.Flush();  // the launch is sent only after this point: the transition is durable
    ASSERT_FALSE(link->Take().empty());
    fs->Crash();
    jm.Stop();
  }
  fs->DropUnsyncedData();
  auto store = Store::Open(dir.Sub("db"), {});
  ASSERT_TRUE(store.ok());
  auto snap = (*store)->Load();
  ASSERT_EQ(snap->jobs.size(), 1u);
  EXPECT_EQ(snap->jobs[0].id(), id);
  EXPECT_EQ(snap->jobs[0].state(), v1::JOB_STATE_SCHEDULED);
  ASSERT_EQ(snap->events.size(), 2u);
  EXPECT_EQ(snap->events[1].to(), v1::JOB_STATE_SCHEDULED);
}

}  // namespace
}  // namespace baton::testing
