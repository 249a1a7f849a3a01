// Power loss, not only process death: a run of saves is cut at every mutating filesystem
// call in turn, everything not fsynced is dropped (or, in the second model, kept at
// random), and a fresh process restores. The newest acknowledged checkpoint must come
// back bit-exact and nothing partial may be taken. Skipping any one of the save's fsyncs
// must make the same sweep fail: that is what proves the sweep can see the difference.
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/fault_env.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"
#include "tests/checkpoint/thread_collective.h"

namespace baton::checkpoint {
namespace {

using testing::FaultInjectionEnv;
using testing::TestState;

constexpr int kSaves = 10;
const std::vector<size_t> kCrashSizes = {100, 150000, 0, 7};

struct Scenario {
  int world_size = 1;
  bool async = false;
  int io_threads = 1;
  uint64_t power_loss_seed = 0;  // 0: drop everything unsynced
  SyncPoint skip = SyncPoint::kNone;
};

Options OptionsFor(const Scenario& sc, FaultInjectionEnv* env) {
  Options o;
  o.dir = "/ckpt";
  o.keep_last = 2;
  o.io_threads = sc.io_threads;
  o.io_unit_bytes = 64 << 10;
  o.env = env;
  o.log = [](const std::string&) {};
  o.skip_sync_for_testing = sc.skip;
  return o;
}

uint64_t Seed(int64_t step, int rank) { return step * 16 + rank; }

// Every rank creates its Checkpointer; nullptr on all ranks if any rank failed (a crash
// while rank 0 created the directory), so that no rank waits for a missing peer.
std::unique_ptr<Checkpointer> CreateOnAllRanks(const Options& o, Collective* c, TestState* state) {
  auto ckpt = Checkpointer::Create(o, c);
  const bool ok = ckpt.ok() && state->Register(**ckpt).ok();
  auto any_failed = c->AllReduceMax(ok ? 0 : 1);
  if (!any_failed.ok() || *any_failed != 0) return nullptr;
  return std::move(*ckpt);
}

// One rank's run: saves steps 1..kSaves until the crash; records the last acknowledged
// step (-1: none) and the step in flight when the crash came.
void SaveUntilCrash(const Scenario& sc, FaultInjectionEnv* env, Collective* c, TestState* state,
                    int64_t* acked, int64_t* in_flight) {
  auto ckpt = CreateOnAllRanks(OptionsFor(sc, env), c, state);
  if (ckpt == nullptr) return;
  for (int step = 1; step <= kSaves; ++step) {
    state->Fill(Seed(step, c->rank()));
    *in_flight = step;
    absl::Status s = sc.async ? ckpt->SaveAsync(step) : ckpt->Save(step);
    if (s.ok() && sc.async) s = ckpt->Wait();
    if (!s.ok()) return;
    *acked = step;
  }
}

// One rank after the power loss: "" when it restored what the guarantees demand.
std::string RestoreAndCheck(const Scenario& sc, FaultInjectionEnv* env, Collective* c,
                            TestState* state, int64_t acked, int64_t in_flight) {
  Scenario clean = sc;
  clean.skip = SyncPoint::kNone;
  state->Clear();
  auto ckpt = CreateOnAllRanks(OptionsFor(clean, env), c, state);
  if (ckpt == nullptr) return "restarting failed";
  auto restored = ckpt->RestoreLatest();
  if (!restored.ok()) return "restore failed: " + std::string(restored.status().message());
  if (!restored->has_value()) return acked < 0 ? "" : "restored nothing";
  const int64_t step = (*restored)->step;
  if (step < acked) return "restored older step " + std::to_string(step);
  if (step != acked && step != in_flight) return "restored step " + std::to_string(step);
  const std::string bad = state->Mismatch(Seed(step, c->rank()));
  if (!bad.empty()) return "buffer " + bad + " of step " + std::to_string(step) + " differs";
  return "";
}

// "" when the guarantees held on every rank after a crash at mutating call `crash_at`.
std::string CheckCrashAt(const Scenario& sc, int64_t crash_at, int64_t* total_ops) {
  FaultInjectionEnv env;
  env.CrashAfterOps(crash_at);
  const int n = sc.world_size;
  std::vector<TestState> states(n, TestState(kCrashSizes));
  std::vector<int64_t> acked(n, -1), in_flight(n, -1);
  std::vector<std::string> verdicts(n);
  testing::ThreadGroup saving(n);
  saving.RunOnAllRanks([&](int r) {
    SaveUntilCrash(sc, &env, saving.rank(r), &states[r], &acked[r], &in_flight[r]);
  });
  if (total_ops) *total_ops = env.mutating_ops();
  env.PowerLoss(sc.power_loss_seed);
  testing::ThreadGroup restoring(n);
  restoring.RunOnAllRanks([&](int r) {
    verdicts[r] = RestoreAndCheck(sc, &env, restoring.rank(r), &states[r], acked[r], in_flight[r]);
  });
  for (int r = 0; r < n; ++r) {
    if (verdicts[r].empty()) continue;
    return "crash at call " + std::to_string(crash_at) + ", rank " + std::to_string(r) +
           " (acked step " + std::to_string(acked[r]) + ", in flight " +
           std::to_string(in_flight[r]) + "): " + verdicts[r];
  }
  return "";
}

struct SweepResult {
  int64_t crash_points = 0;
  int violations = 0;
  std::string first_violation;
};

SweepResult Sweep(const Scenario& sc) {
  SweepResult result;
  CheckCrashAt(sc, /*crash_at=*/-1, &result.crash_points);  // counts the calls of a full run
  for (int64_t k = 0; k < result.crash_points; ++k) {
    const std::string violation = CheckCrashAt(sc, k, nullptr);
    if (violation.empty()) continue;
    if (result.violations++ == 0) result.first_violation = violation;
  }
  return result;
}

TEST(PowerLoss, NewestAckedCheckpointSurvivesEveryCrashPoint) {
  const SweepResult r = Sweep({});
  EXPECT_GE(r.crash_points, 200);
  EXPECT_EQ(r.violations, 0) << r.first_violation;
}

TEST(PowerLoss, AsyncSavesWithParallelWritersSurviveEveryCrashPoint) {
  const SweepResult r = Sweep({.async = true, .io_threads = 3});
  EXPECT_GE(r.crash_points, 200);
  EXPECT_EQ(r.violations, 0) << r.first_violation;
}

TEST(PowerLoss, TwoRanksAgreeOnTheNewestAckedCheckpointAtEveryCrashPoint) {
  const SweepResult r = Sweep({.world_size = 2, .io_threads = 2});
  EXPECT_GE(r.crash_points, 300);
  EXPECT_EQ(r.violations, 0) << r.first_violation;
}

TEST(PowerLoss, SurvivesWhenSomeUnsyncedWritesReachTheDisk) {
  for (uint64_t seed : {11, 12, 13}) {
    const SweepResult r = Sweep({.power_loss_seed = seed});
    EXPECT_EQ(r.violations, 0) << "seed " << seed << ": " << r.first_violation;
  }
}

// Each of the save's fsyncs, skipped, must let some crash lose an acknowledged checkpoint.
class SkippedSync : public ::testing::TestWithParam<SyncPoint> {};

TEST_P(SkippedSync, IsCaughtByTheSweep) {
  const SweepResult r = Sweep({.skip = GetParam()});
  EXPECT_GT(r.violations, 0) << "skipping this fsync went unnoticed over " << r.crash_points
                             << " crash points";
}

INSTANTIATE_TEST_SUITE_P(EveryFsync, SkippedSync,
                         ::testing::Values(SyncPoint::kShardFile, SyncPoint::kRootDir,
                                           SyncPoint::kManifestFile, SyncPoint::kManifestDir));

TEST(PowerLoss, AShardThatWasNeverSyncedIsDetectedNotRestored) {
  FaultInjectionEnv env;
  testing::LogCapture log;
  TestState state(kCrashSizes);
  {
    LocalCollective collective;
    Options o = OptionsFor({.skip = SyncPoint::kShardFile}, &env);
    auto ckpt = *Checkpointer::Create(o, &collective);
    ASSERT_TRUE(state.Register(*ckpt).ok());
    state.Fill(1);
    ASSERT_TRUE(ckpt->Save(1).ok());
  }
  env.PowerLoss();
  LocalCollective collective;
  Options o = OptionsFor({}, &env);
  o.log = log.Sink();
  auto ckpt = *Checkpointer::Create(o, &collective);
  ASSERT_TRUE(state.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_FALSE(restored->has_value());
  EXPECT_THAT(log.Text(),
              ::testing::HasSubstr("rank-0.shard has 0 bytes but the manifest records"));
}

TEST(FaultInjectionEnv, DropsWhatWasNotSynced) {
  FaultInjectionEnv env;
  ASSERT_TRUE(env.CreateDir("/d").ok());
  ASSERT_TRUE(env.SyncDir("/").ok());
  ASSERT_TRUE(WriteFileAtomically(&env, "/d/durable", "kept").ok());
  ASSERT_TRUE(ReplaceFileContents(&env, "/d/volatile", "lost").ok());
  ASSERT_TRUE(env.Rename("/d/durable", "/d/renamed").ok());  // directory not synced after
  env.PowerLoss();
  EXPECT_EQ(*ReadSmallFile(&env, "/d/durable", 100), "kept");
  EXPECT_FALSE(*env.FileExists("/d/renamed"));
  EXPECT_FALSE(*env.FileExists("/d/volatile"));
}

TEST(FaultInjectionEnv, FailsEverythingFromTheCrashPointOn) {
  FaultInjectionEnv env;
  env.CrashAfterOps(1);
  EXPECT_TRUE(env.CreateDir("/a").ok());
  EXPECT_FALSE(env.CreateDir("/b").ok());
  EXPECT_TRUE(env.crashed());
  EXPECT_FALSE(env.SyncDir("/").ok());
  env.PowerLoss();
  EXPECT_FALSE(*env.FileExists("/a"));
  EXPECT_TRUE(env.CreateDir("/b").ok());
}

}  // namespace
}  // namespace baton::checkpoint
