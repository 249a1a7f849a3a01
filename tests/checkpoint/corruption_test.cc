// Damaged checkpoints on a real filesystem: every kind of damage is detected with a clear
// reason, the checkpoint is skipped, and the next older valid one is restored bit-exact.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
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
using testing::ScratchDir;
using testing::TestState;

const std::vector<size_t> kCorruptedSizes = {3000, 200000, 1};

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ckpt = Make();
    ASSERT_TRUE(state_.Register(*ckpt).ok());
    for (int step : {1, 2}) {
      state_.Fill(step);
      ASSERT_TRUE(ckpt->Save(step).ok());
    }
    state_.Clear();
  }

  std::unique_ptr<Checkpointer> Make() {
    auto ckpt = Checkpointer::Create({.dir = dir_.path(), .log = log_.Sink()}, &local_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    return std::move(*ckpt);
  }

  // Restores in a fresh Checkpointer; the step, or -1 for none.
  int64_t Restore() {
    auto ckpt = Make();
    EXPECT_TRUE(state_.Register(*ckpt).ok());
    auto restored = ckpt->RestoreLatest();
    EXPECT_TRUE(restored.ok()) << restored.status();
    if (!restored.ok() || !restored->has_value()) return -1;
    return (*restored)->step;
  }

  std::string Shard(int step) const {
    return dir_.path() + "/step-" + std::to_string(step) + "/rank-0.shard";
  }
  std::string Manifest(int step) const {
    return dir_.path() + "/step-" + std::to_string(step) + "/MANIFEST";
  }

  ScratchDir dir_;
  LocalCollective local_;
  LogCapture log_;
  TestState state_{kCorruptedSizes};
};

TEST_F(CorruptionTest, TruncatedShardFallsBackToThePreviousStep) {
  std::filesystem::resize_file(Shard(2), std::filesystem::file_size(Shard(2)) - 4096);
  EXPECT_EQ(Restore(), 1);
  EXPECT_EQ(state_.Mismatch(1), "");
  EXPECT_THAT(log_.Text(), HasSubstr("skipping " + dir_.path() + "/step-2"));
  EXPECT_THAT(log_.Text(), HasSubstr("(truncated or replaced)"));
}

TEST_F(CorruptionTest, FlippedDataByteFailsTheChecksum) {
  testing::FlipByte(Shard(2), 4096 + 1234);  // inside the first buffer
  EXPECT_EQ(Restore(), 1);
  EXPECT_EQ(state_.Mismatch(1), "");
  EXPECT_THAT(log_.Text(), HasSubstr("rank-0.shard checksum mismatch"));
}

TEST_F(CorruptionTest, FlippedHeaderByteIsCaughtBeforeAnyBufferIsTouched) {
  testing::FlipByte(Shard(2), 60);  // inside the buffer table
  EXPECT_EQ(Restore(), 1);
  EXPECT_THAT(log_.Text(), HasSubstr("shard header"));
}

TEST_F(CorruptionTest, MissingManifestMeansNotCommitted) {
  std::filesystem::remove(Manifest(2));
  EXPECT_EQ(Restore(), 1);
  EXPECT_THAT(log_.Text(), HasSubstr("step-2: no MANIFEST (the save never committed)"));
}

TEST_F(CorruptionTest, DamagedManifestIsSkipped) {
  testing::FlipByte(Manifest(2), 30);
  EXPECT_EQ(Restore(), 1);
  EXPECT_THAT(log_.Text(), HasSubstr("manifest checksum mismatch"));
}

TEST_F(CorruptionTest, MissingShardIsSkipped) {
  std::filesystem::remove(Shard(2));
  EXPECT_EQ(Restore(), 1);
  EXPECT_THAT(log_.Text(), HasSubstr("rank-0.shard: No such file or directory"));
}

TEST_F(CorruptionTest, ShardOfAnotherStepIsNotTaken) {
  std::filesystem::copy_file(Shard(1), Shard(2), std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(Restore(), 1);
  EXPECT_THAT(log_.Text(), HasSubstr("belongs to step 1 rank 0 of 1, not to this checkpoint"));
}

TEST_F(CorruptionTest, NothingValidAfterOverwritingIsDataLoss) {
  testing::FlipByte(Shard(2), 4096 + 5);
  testing::FlipByte(Shard(1), 4096 + 5);
  auto ckpt = Make();
  ASSERT_TRUE(state_.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(
      std::string(restored.status().message()),
      HasSubstr("no checkpoint verifies and the registered buffers were partly overwritten"));
}

TEST_F(CorruptionTest, NothingValidBeforeTouchingBuffersIsNone) {
  std::filesystem::remove(Shard(1));
  std::filesystem::resize_file(Shard(2), 100);
  state_.Fill(77);
  EXPECT_EQ(Restore(), -1);
  EXPECT_EQ(state_.Mismatch(77), "") << "buffers must be left alone";
}

TEST_F(CorruptionTest, ManifestOfAnotherWorldSizeIsAClearError) {
  testing::ThreadGroup group(2);
  group.RunOnAllRanks([&](int rank) {
    TestState state(kCorruptedSizes);
    auto ckpt = *Checkpointer::Create({.dir = dir_.path()}, group.rank(rank));
    ASSERT_TRUE(state.Register(*ckpt).ok());
    ASSERT_TRUE(ckpt->Save(3).ok());
  });
  auto ckpt = Make();
  ASSERT_TRUE(state_.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(restored.status().message()),
              HasSubstr("step-3 was written by 2 ranks but this job has 1"));
}

TEST(CorruptionMultiRank, DamageOnRankOneMakesEveryRankFallBack) {
  ScratchDir dir;
  LogCapture log;
  testing::ThreadGroup group(2);
  auto run = [&](const std::function<void(int, Checkpointer&, TestState&)>& body) {
    group.RunOnAllRanks([&](int rank) {
      TestState state({static_cast<size_t>(5000 + rank), 100});
      auto ckpt = *Checkpointer::Create({.dir = dir.path(), .log = log.Sink()}, group.rank(rank));
      ASSERT_TRUE(state.Register(*ckpt).ok());
      body(rank, *ckpt, state);
    });
  };
  run([](int rank, Checkpointer& ckpt, TestState& state) {
    for (int step : {4, 8}) {
      state.Fill(step * 10 + rank);
      ASSERT_TRUE(ckpt.Save(step).ok());
    }
  });
  testing::FlipByte(dir.path() + "/step-8/rank-1.shard", 4096 + 17);
  std::vector<int64_t> steps(2, -1);
  std::vector<std::string> mismatch(2, "?");
  run([&](int rank, Checkpointer& ckpt, TestState& state) {
    auto restored = ckpt.RestoreLatest();
    ASSERT_TRUE(restored.ok() && restored->has_value()) << restored.status();
    steps[rank] = (*restored)->step;
    mismatch[rank] = state.Mismatch(steps[rank] * 10 + rank);
  });
  EXPECT_THAT(steps, ElementsAre(4, 4));
  EXPECT_THAT(mismatch, ElementsAre("", ""));
  EXPECT_THAT(log.Text(), HasSubstr("step-8: rank 1: "));
  EXPECT_THAT(log.Text(), HasSubstr("rank-1.shard checksum mismatch"));
}

}  // namespace
}  // namespace baton::checkpoint
