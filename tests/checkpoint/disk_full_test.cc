// A full disk, for real: a small tmpfs mounted for the test (CI runs as root; elsewhere the
// test skips). A save that runs out of space fails cleanly, leaves the previous checkpoints
// intact and leaves nothing that a later restore could take.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::LogCapture;
using testing::ScratchDir;
using testing::TestState;

constexpr size_t kStateBytes = 5 << 20;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, "size=12m") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs at " << dir_.path()
                   << " (needs root): " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }

  std::unique_ptr<Checkpointer> Make() {
    auto ckpt = Checkpointer::Create({.dir = dir_.Sub("ckpt"), .keep_last = 3, .log = log_.Sink()},
                                     &local_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    EXPECT_TRUE(state_.Register(**ckpt).ok());
    return std::move(*ckpt);
  }

  std::vector<int64_t> Steps(Checkpointer& ckpt) {
    std::vector<int64_t> steps;
    for (const CheckpointInfo& info : ckpt.List().value_or(std::vector<CheckpointInfo>{})) {
      steps.push_back(info.step);
    }
    return steps;
  }

  void ExpectRestores(int64_t step) {
    state_.Clear();
    auto ckpt = Make();
    auto restored = ckpt->RestoreLatest();
    ASSERT_TRUE(restored.ok()) << restored.status();
    ASSERT_TRUE(restored->has_value());
    EXPECT_EQ((*restored)->step, step);
    EXPECT_EQ(state_.Mismatch(step), "");
  }

  uint64_t FreeBytes() {
    struct statvfs st;
    EXPECT_EQ(::statvfs(dir_.path().c_str(), &st), 0);
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }

  ScratchDir dir_;
  bool mounted_ = false;
  LocalCollective local_;
  LogCapture log_;
  TestState state_{{kStateBytes, 4000}};
};

TEST_F(DiskFullTest, ShardThatDoesNotFitFailsCleanly) {
  auto ckpt = Make();
  for (int step : {1, 2}) {
    state_.Fill(step);
    ASSERT_TRUE(ckpt->Save(step).ok());
  }
  state_.Fill(3);
  const absl::Status full = ckpt->Save(3);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(full.message()), HasSubstr("save of step 3 failed"));
  EXPECT_THAT(std::string(full.message()), HasSubstr("No space left on device"));
  EXPECT_THAT(Steps(*ckpt), ElementsAre(2, 1));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ckpt/step-3"))) << "the partial save is gone";
  ExpectRestores(2);

  // With room again, the same step saves and restores.
  ASSERT_EQ(::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_REMOUNT, "size=32m"), 0);
  state_.Fill(3);
  ASSERT_TRUE(ckpt->Save(3).ok());
  ExpectRestores(3);
}

TEST_F(DiskFullTest, RunningOutWhileCommittingKeepsThePreviousCheckpoint) {
  auto ckpt = Make();
  state_.Fill(1);
  ASSERT_TRUE(ckpt->Save(1).ok());
  const uint64_t shard = std::filesystem::file_size(dir_.Sub("ckpt/step-1/rank-0.shard"));
  // Leave room for the shard and nothing more: the MANIFEST is what no longer fits.
  const int hog = ::open(dir_.Sub("hog").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(hog, 0);
  ASSERT_GT(FreeBytes(), shard);
  ASSERT_EQ(::posix_fallocate(hog, 0, static_cast<off_t>(FreeBytes() - shard)), 0);
  ::close(hog);
  ASSERT_EQ(FreeBytes(), shard);
  state_.Fill(2);
  const absl::Status full = ckpt->Save(2);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(std::string(full.message()), HasSubstr("MANIFEST.tmp"));
  EXPECT_THAT(Steps(*ckpt), ElementsAre(1));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ckpt/step-2")));
  ExpectRestores(1);
}

}  // namespace
}  // namespace baton::checkpoint
