// The fence (FORMAT.md "Fence"): once a relaunched attempt has started on a checkpoint
// directory, the attempt it replaced — still running on a cut-off node — can neither
// commit nor disturb the new attempt's steps, restore ignores what it slipped through,
// and its preemption watcher tells it to stop.
#include "checkpoint/fence.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/preemption.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"
#include "tests/checkpoint/thread_collective.h"

namespace baton::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LogCapture;
using testing::PeersCollective;
using testing::ScratchDir;
using testing::TestState;

class FenceTest : public ::testing::Test {
 protected:
  std::unique_ptr<Checkpointer> Make(int64_t attempt, TestState& state) {
    Options options;
    options.dir = dir_.Sub("ckpt");
    options.attempt = attempt;
    options.log = log_.Sink();
    auto ckpt = Checkpointer::Create(std::move(options), &local_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    if (!ckpt.ok()) return nullptr;
    EXPECT_TRUE(state.Register(**ckpt).ok());
    return std::move(*ckpt);
  }
  std::vector<int64_t> Listed(Checkpointer& ckpt) {
    absl::StatusOr<std::vector<CheckpointInfo>> list = ckpt.List();
    std::vector<int64_t> steps;
    if (!list.ok()) return steps;
    for (const CheckpointInfo& info : *list) steps.push_back(info.step);
    return steps;
  }
  bool Exists(const std::string& sub) { return std::filesystem::exists(dir_.Sub("ckpt/" + sub)); }
  void WriteFence(const std::string& text) {
    std::ofstream(dir_.Sub("ckpt/FENCE"), std::ios::trunc) << text;
  }

  ScratchDir dir_;
  LocalCollective local_;
  LogCapture log_;
};

TEST_F(FenceTest, AStaleAttemptCannotCommitNorTouchTheNewAttemptsSteps) {
  TestState old_state({4096, 100}), new_state({4096, 100});
  auto stale = Make(1, old_state);
  old_state.Fill(10);
  ASSERT_TRUE(stale->Save(10).ok());

  auto fresh = Make(2, new_state);  // the relaunch: raises the fence over step 10
  auto fence = ReadFence(DefaultEnv(), dir_.Sub("ckpt"));
  ASSERT_TRUE(fence.ok()) << fence.status();
  EXPECT_EQ(fence->attempt, 2);
  EXPECT_EQ(fence->step, 10);
  ASSERT_TRUE(fresh->RestoreLatest().ok());
  new_state.Fill(12);
  ASSERT_TRUE(fresh->Save(12).ok());

  // The old attempt runs on: a new step is refused before anything is written...
  old_state.Fill(11);
  absl::Status s = stale->Save(11);
  EXPECT_TRUE(IsSuperseded(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("superseded by attempt 2"));
  EXPECT_FALSE(Exists("step-11"));
  // ...and a step the new attempt committed keeps its MANIFEST and its shards.
  old_state.Fill(99);
  s = stale->Save(12);
  EXPECT_TRUE(IsSuperseded(s)) << s;
  EXPECT_TRUE(Exists("step-12/MANIFEST"));
  EXPECT_TRUE(Exists("step-12/rank-0.shard"));
  EXPECT_EQ(stale->last_committed_step(), 10);

  TestState check({4096, 100});
  auto next = Make(3, check);
  auto restored = next->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 12);
  EXPECT_EQ((*restored)->attempt, 2);
  EXPECT_EQ(check.Mismatch(12), "");
}

// The POSIX Env, calling `on_shard` once when the first shard file is created: the moment
// between a save's fence check at prepare and its commit.
class ShardHookEnv : public EnvWrapper {
 public:
  explicit ShardHookEnv(std::function<void()> on_shard)
      : EnvWrapper(DefaultEnv()), on_shard_(std::move(on_shard)) {}
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path, const WritableFileOptions& options) override {
    if (on_shard_ && path.ends_with(".shard")) std::exchange(on_shard_, nullptr)();
    return EnvWrapper::NewWritableFile(path, options);
  }

 private:
  std::function<void()> on_shard_;
};

TEST_F(FenceTest, ARelaunchDuringASaveStopsItsCommitAndItsCleanup) {
  ShardHookEnv env([this] {
    CheckpointDir dir(DefaultEnv(), dir_.Sub("ckpt"));
    ASSERT_TRUE(RaiseFence(DefaultEnv(), dir, 2).ok());  // attempt 2 starts elsewhere now
  });
  Options options;
  options.dir = dir_.Sub("ckpt");
  options.attempt = 1;
  options.env = &env;
  auto stale = Checkpointer::Create(std::move(options), &local_);
  ASSERT_TRUE(stale.ok()) << stale.status();
  TestState state({4096});
  ASSERT_TRUE(state.Register(**stale).ok());
  state.Fill(7);
  absl::Status s = (*stale)->Save(7);
  EXPECT_TRUE(IsSuperseded(s)) << s;
  EXPECT_FALSE(Exists("step-7/MANIFEST")) << "the commit checks the fence again";
  EXPECT_TRUE(Exists("step-7/rank-0.shard"))
      << "a superseded save removes nothing: the files may be the new attempt's by now";
}

TEST_F(FenceTest, AnOlderAttemptStartingLateIsNotRefusedButCannotSave) {
  TestState a({64}), b({64});
  auto newer = Make(5, a);
  a.Fill(3);
  ASSERT_TRUE(newer->Save(3).ok());
  auto older = Make(4, b);  // Create succeeds, so that its ranks stay in step
  EXPECT_THAT(log_.Text(), HasSubstr("superseded by attempt 5"));
  auto restored = older->RestoreLatest();  // reading is harmless
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ((*restored)->step, 3);
  EXPECT_TRUE(IsSuperseded(older->Save(4)));
  auto fence = ReadFence(DefaultEnv(), dir_.Sub("ckpt"));
  EXPECT_EQ(fence->attempt, 5) << "an older attempt never lowers the fence";
}

TEST_F(FenceTest, RestoreIgnoresAStaleCommitPastTheFenceAndTheNextRaiseUncommitsIt) {
  TestState old_state({4096});
  auto stale = Make(1, old_state);
  old_state.Fill(10);
  ASSERT_TRUE(stale->Save(10).ok());
  old_state.Fill(11);
  ASSERT_TRUE(stale->Save(11).ok());
  // The race the fence allows: attempt 2 raised it over step 10 while attempt 1's commit
  // of step 11 was landing (checked the fence before, renamed after).
  WriteFence("attempt 2\nstep 10\n");

  TestState s2({4096});
  auto second = Make(2, s2);
  EXPECT_THAT(Listed(*second), ElementsAre(10));
  auto restored = second->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ((*restored)->step, 10);
  EXPECT_EQ(s2.Mismatch(10), "");
  EXPECT_THAT(log_.Text(), HasSubstr("after attempt 2 had superseded it"));

  TestState s3({4096});
  auto third = Make(3, s3);
  EXPECT_FALSE(Exists("step-11/MANIFEST")) << "uncommitted by attempt 3's raise";
  auto fence = ReadFence(DefaultEnv(), dir_.Sub("ckpt"));
  EXPECT_EQ(fence->attempt, 3);
  EXPECT_EQ(fence->step, 10);
}

TEST_F(FenceTest, ADamagedFenceFailsSavesNamingIt) {
  TestState state({64});
  auto ckpt = Make(1, state);
  WriteFence("attempt two\n");
  absl::Status s = ckpt->Save(1);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("FENCE is damaged"));
  EXPECT_FALSE(Exists("step-1/MANIFEST"));
}

TEST_F(FenceTest, AttemptZeroNeverWritesAFence) {
  TestState state({64});
  auto ckpt = Make(0, state);
  state.Fill(1);
  ASSERT_TRUE(ckpt->Save(1).ok());
  EXPECT_FALSE(Exists("FENCE"));
}

TEST_F(FenceTest, TheWatcherStopsASupersededAttemptOnEveryRank) {
  std::filesystem::create_directories(dir_.Sub("ckpt"));
  {
    auto watcher = PreemptionWatcher::Create(
        {.grace_seconds = 30, .fence_dir = dir_.Sub("ckpt"), .attempt = 1, .fence_poll_ms = 0});
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    LocalCollective local;
    EXPECT_FALSE(*(*watcher)->ShouldStop(local)) << "no fence yet";
    WriteFence("attempt 1\nstep -1\n");
    EXPECT_FALSE(*(*watcher)->ShouldStop(local)) << "its own fence";
    CheckpointDir dir(DefaultEnv(), dir_.Sub("ckpt"));
    ASSERT_TRUE(RaiseFence(DefaultEnv(), dir, 2).ok());
    EXPECT_TRUE(*(*watcher)->ShouldStop(local));
    EXPECT_TRUE((*watcher)->Superseded());
    EXPECT_EQ((*watcher)->superseded_by(), 2);
    EXPECT_TRUE((*watcher)->StopRequested());
  }
  {
    // This rank has not read the fence yet (a long poll interval), a peer has: both agree.
    auto watcher = PreemptionWatcher::Create({.grace_seconds = 30,
                                              .fence_dir = dir_.Sub("none"),
                                              .attempt = 1,
                                              .fence_poll_ms = 1000000});
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    PeersCollective quiet(0), signaled(1), superseded(1 + 7);
    EXPECT_FALSE(*(*watcher)->ShouldStop(quiet));
    EXPECT_TRUE(*(*watcher)->ShouldStop(signaled));
    EXPECT_FALSE((*watcher)->Superseded()) << "a plain stop is not a supersession";
    EXPECT_TRUE(*(*watcher)->ShouldStop(superseded));
    EXPECT_EQ((*watcher)->superseded_by(), 7);
  }
}

}  // namespace
}  // namespace baton::checkpoint
