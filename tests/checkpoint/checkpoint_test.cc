// The Checkpointer on a real filesystem with one process or a few in-process ranks: round
// trips, metadata, retention, async saves, progress reports, and input validation.
#include "checkpoint/checkpoint.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/fault_env.h"
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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int64_t> Steps(Checkpointer& ckpt) {
  absl::StatusOr<std::vector<CheckpointInfo>> list = ckpt.List();
  std::vector<int64_t> steps;
  if (!list.ok()) return steps;
  for (const CheckpointInfo& info : *list) steps.push_back(info.step);
  return steps;
}

class CheckpointerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Checkpointer> Make(Options options = {}) {
    if (options.dir.empty()) options.dir = dir_.Sub("ckpt");
    options.log = log_.Sink();
    auto ckpt = Checkpointer::Create(std::move(options), &local_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    return ckpt.ok() ? std::move(*ckpt) : nullptr;
  }

  ScratchDir dir_;
  LocalCollective local_;
  LogCapture log_;
};

TEST_F(CheckpointerTest, RoundTripsMixedBuffersAndMetadata) {
  const std::vector<size_t> sizes = {0, 1, 4095, 4096, 4097, (1 << 20) + 3, 3 << 20};
  TestState state(sizes);
  {
    auto ckpt = Make({.attempt = 4});
    ASSERT_TRUE(state.Register(*ckpt).ok());
    ASSERT_TRUE(ckpt->SetMetadata("lr", "0.001").ok());
    ASSERT_TRUE(ckpt->SetMetadata("odd key\n", std::string("\0bytes%", 7)).ok());
    state.Fill(10);
    ASSERT_TRUE(ckpt->Save(10).ok());
    EXPECT_EQ(ckpt->last_committed_step(), 10);
  }
  state.Clear();
  auto ckpt = Make();
  ASSERT_TRUE(state.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 10);
  EXPECT_EQ((*restored)->attempt, 4);
  EXPECT_EQ((*restored)->world_size, 1);
  EXPECT_EQ((*restored)->bytes, std::filesystem::file_size(dir_.Sub("ckpt/step-10/rank-0.shard")));
  EXPECT_EQ(state.Mismatch(10), "");
  EXPECT_EQ(ckpt->metadata().at("lr"), "0.001");
  EXPECT_EQ(ckpt->metadata().at("odd key\n"), std::string("\0bytes%", 7));
  EXPECT_EQ((*restored)->metadata, ckpt->metadata());
}

TEST_F(CheckpointerTest, RestoreWithNothingSavedReturnsNone) {
  TestState state({100});
  auto ckpt = Make();
  ASSERT_TRUE(state.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_FALSE(restored->has_value());
  EXPECT_EQ(ckpt->last_committed_step(), -1);
}

TEST_F(CheckpointerTest, SaveAsyncSnapshotsAtTheCallNotAtTheWrite) {
  TestState state({5 << 20, 12345});
  auto ckpt = Make({.io_unit_bytes = 1 << 20});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  state.Fill(1);
  ASSERT_TRUE(ckpt->SaveAsync(1).ok());
  state.Fill(2);  // training goes on while the background thread writes
  ASSERT_TRUE(ckpt->SaveAsync(2).ok());
  state.Fill(3);
  ASSERT_TRUE(ckpt->Wait().ok());
  EXPECT_EQ(ckpt->last_committed_step(), 2);
  state.Clear();
  ASSERT_TRUE(ckpt->RestoreLatest().ok());
  EXPECT_EQ(state.Mismatch(2), "");
}

TEST_F(CheckpointerTest, RetentionKeepsTheLastK) {
  TestState state({1000});
  auto ckpt = Make({.keep_last = 2});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  for (int step = 1; step <= 5; ++step) {
    state.Fill(step);
    ASSERT_TRUE(ckpt->Save(step).ok());
  }
  EXPECT_THAT(Steps(*ckpt), ElementsAre(5, 4));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("ckpt"))) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_THAT(names, ElementsAre("PROGRESS", "step-4", "step-5"));
}

TEST_F(CheckpointerTest, KeepLastOneStillKeepsTheNewest) {
  TestState state({1000});
  auto ckpt = Make({.keep_last = 1});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  for (int step : {3, 6}) {
    state.Fill(step);
    ASSERT_TRUE(ckpt->Save(step).ok());
  }
  EXPECT_THAT(Steps(*ckpt), ElementsAre(6));
  state.Clear();
  ASSERT_EQ((*ckpt->RestoreLatest())->step, 6);
  EXPECT_EQ(state.Mismatch(6), "");
}

TEST_F(CheckpointerTest, SavingAStepAgainReplacesIt) {
  TestState state({70000});
  auto ckpt = Make();
  ASSERT_TRUE(state.Register(*ckpt).ok());
  state.Fill(100);
  ASSERT_TRUE(ckpt->Save(3).ok());
  state.Fill(200);
  ASSERT_TRUE(ckpt->Save(3).ok());
  state.Clear();
  ASSERT_EQ((*ckpt->RestoreLatest())->step, 3);
  EXPECT_EQ(state.Mismatch(200), "");
}

TEST_F(CheckpointerTest, DirectAndBufferedWritesGiveTheSameFile) {
  TestState state({1, 300000, 5 << 20, 77});
  state.Fill(9);
  std::string files[2];
  for (bool direct : {false, true}) {
    ScratchDir dir;
    auto ckpt = Make(
        {.dir = dir.Sub("c"), .io_threads = 3, .io_unit_bytes = 256 << 10, .direct_io = direct});
    ASSERT_TRUE(state.Register(*ckpt).ok());
    ASSERT_TRUE(ckpt->Save(1).ok());
    files[direct] = ReadFile(dir.Sub("c/step-1/rank-0.shard"));
  }
  EXPECT_EQ(files[0].size(), files[1].size());
  EXPECT_TRUE(files[0] == files[1]);
}

TEST_F(CheckpointerTest, ProgressFileSaysSavingThenCommitted) {
  // An Env that peeks at the progress file when the shard is being created.
  class PeekingEnv : public testing::FaultInjectionEnv {
   public:
    absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
        const std::string& path, const WritableFileOptions& o) override {
      if (path.find(".shard") != std::string::npos) {
        seen = ReadSmallFile(this, "/job.progress", 4096).value_or("missing");
      }
      return FaultInjectionEnv::NewWritableFile(path, o);
    }
    std::string seen;
  };
  PeekingEnv env;
  TestState state({10});
  auto ckpt = Make({.dir = "/ckpt", .attempt = 3, .progress_file = "/job.progress", .env = &env});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  ASSERT_TRUE(ckpt->Save(5).ok());
  ASSERT_TRUE(ckpt->Save(8).ok());
  auto saving = ParseProgress(env.seen);
  ASSERT_TRUE(saving.ok()) << saving.status() << " in " << env.seen;
  EXPECT_EQ(saving->state, "saving");
  EXPECT_EQ(saving->step, 8);
  EXPECT_EQ(saving->committed_step, 5);
  EXPECT_EQ(saving->attempt, 3);
  auto done = ParseProgress(*ReadSmallFile(&env, "/job.progress", 4096));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, "committed");
  EXPECT_EQ(done->step, 8);
  EXPECT_EQ(done->committed_step, 8);
}

TEST_F(CheckpointerTest, ProgressFileFollowsTheEnvironment) {
  ::setenv("BATON_PROGRESS_FILE", dir_.Sub("agent.progress").c_str(), 1);
  ::setenv("BATON_ATTEMPT", "6", 1);
  TestState state({10});
  auto ckpt = Make();
  ::unsetenv("BATON_PROGRESS_FILE");
  ::unsetenv("BATON_ATTEMPT");
  ASSERT_TRUE(state.Register(*ckpt).ok());
  ASSERT_TRUE(ckpt->Save(2).ok());
  auto p = ParseProgress(ReadFile(dir_.Sub("agent.progress")));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->attempt, 6);
  EXPECT_EQ(p->committed_step, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("ckpt/PROGRESS")));
}

TEST_F(CheckpointerTest, RegistrationRejectsBadBuffers) {
  auto ckpt = Make();
  char data[8];
  ASSERT_TRUE(ckpt->RegisterHostBuffer("a", data, sizeof(data)).ok());
  EXPECT_EQ(ckpt->RegisterHostBuffer("a", data, 1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ckpt->RegisterHostBuffer("", data, 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt->RegisterHostBuffer(std::string(2000, 'n'), data, 1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ckpt->RegisterHostBuffer("null", nullptr, 4).message()),
              HasSubstr("null address"));
  EXPECT_TRUE(ckpt->RegisterHostBuffer("empty", nullptr, 0).ok());
  const absl::Status device = ckpt->RegisterDeviceBuffer("gpu", data, 8);
  EXPECT_EQ(device.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(device.message()), HasSubstr("device_memory"));
  EXPECT_EQ(ckpt->SetMetadata("", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt->SetMetadata("k", std::string(70000, 'v')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ckpt->Save(-1).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CheckpointerTest, CreateRejectsBadOptionsAndEnvironment) {
  ::unsetenv("BATON_CHECKPOINT_DIR");
  auto no_dir = Checkpointer::Create({}, &local_);
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("BATON_CHECKPOINT_DIR"));
  const std::string d = dir_.Sub("c");
  EXPECT_EQ(Checkpointer::Create({.dir = d, .keep_last = -1}, &local_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Checkpointer::Create({.dir = d, .io_threads = 0}, &local_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(
          Checkpointer::Create({.dir = d, .io_queue_depth = 0}, &local_).status().message()),
      HasSubstr("io_queue_depth must be in 1..64, got 0"));
  EXPECT_THAT(
      std::string(
          Checkpointer::Create({.dir = d, .io_unit_bytes = 1000}, &local_).status().message()),
      HasSubstr("64 KiB"));
  EXPECT_EQ(Checkpointer::Create({.dir = d}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  ::setenv("BATON_ATTEMPT", "two", 1);
  auto bad_attempt = Checkpointer::Create({.dir = d}, &local_);
  ::unsetenv("BATON_ATTEMPT");
  EXPECT_THAT(std::string(bad_attempt.status().message()), HasSubstr("BATON_ATTEMPT='two'"));
  auto no_parent = Checkpointer::Create({.dir = dir_.Sub("missing/ckpt")}, &local_);
  EXPECT_THAT(std::string(no_parent.status().message()), HasSubstr("parent must exist"));
  ::setenv("BATON_CHECKPOINT_DIR", (d + "//").c_str(), 1);
  EXPECT_TRUE(Checkpointer::Create({}, &local_).ok());
  ::unsetenv("BATON_CHECKPOINT_DIR");
  EXPECT_TRUE(std::filesystem::is_directory(d));
}

TEST_F(CheckpointerTest, RestoreRefusesDifferentBuffers) {
  {
    TestState state({100, 200});
    auto ckpt = Make();
    ASSERT_TRUE(state.Register(*ckpt).ok());
    ASSERT_TRUE(ckpt->Save(1).ok());
  }
  TestState bigger({100, 300});
  auto ckpt = Make();
  ASSERT_TRUE(bigger.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(restored.status().message()),
              HasSubstr("200 bytes for buffer 'buffer-1' but 300 are registered"));
  TestState fewer({100});
  auto ckpt2 = Make();
  ASSERT_TRUE(fewer.Register(*ckpt2).ok());
  EXPECT_THAT(std::string(ckpt2->RestoreLatest().status().message()),
              HasSubstr("'buffer-1', which is not registered"));
}

TEST_F(CheckpointerTest, AsyncFailuresSurfaceInWaitAndTheLog) {
  testing::FaultInjectionEnv env;
  TestState state({5000});
  auto ckpt = Make({.dir = "/ckpt", .env = &env});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  env.CrashAfterOps(env.mutating_ops() + 3);
  ASSERT_TRUE(ckpt->SaveAsync(1).ok());
  const absl::Status waited = ckpt->Wait();
  EXPECT_FALSE(waited.ok());
  EXPECT_THAT(std::string(waited.message()), HasSubstr("save of step 1 failed"));
  EXPECT_THAT(log_.Text(), HasSubstr("async save of step 1 failed"));
  EXPECT_TRUE(ckpt->Wait().ok()) << "an error is reported once";
}

TEST_F(CheckpointerTest, SaveAsyncNeedsACollectiveUsableFromAThread) {
  class SingleThreaded : public Collective {
   public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    absl::StatusOr<int64_t> AllReduceMax(int64_t v) override { return v; }
    absl::StatusOr<std::vector<std::string>> AllGather(const std::string& v) override {
      return std::vector<std::string>{v};
    }
    absl::StatusOr<std::string> Broadcast(const std::string& v) override { return v; }
    bool SupportsBackgroundThread() const override { return false; }
  } collective;
  auto ckpt = Checkpointer::Create({.dir = dir_.Sub("c")}, &collective);
  ASSERT_TRUE(ckpt.ok());
  const absl::Status s = (*ckpt)->SaveAsync(1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("MPI_THREAD_MULTIPLE"));
  EXPECT_TRUE((*ckpt)->Save(1).ok());
}

TEST_F(CheckpointerTest, ThreeRanksSaveAndRestoreTheSameStep) {
  testing::ThreadGroup group(3);
  const std::string dir = dir_.Sub("ckpt");
  std::vector<int64_t> restored(3, -1);
  std::vector<std::string> mismatch(3, "?");
  group.RunOnAllRanks([&](int rank) {
    TestState state({static_cast<size_t>(1000 + 777 * rank), 64 << 10});
    auto ckpt = *Checkpointer::Create({.dir = dir, .log = log_.Sink()}, group.rank(rank));
    if (!state.Register(*ckpt).ok()) return;
    for (int step : {1, 2}) {
      state.Fill(step * 10 + rank);
      if (!(step == 1 ? ckpt->SaveAsync(step) : ckpt->Save(step)).ok()) return;
    }
    state.Clear();
    auto r = ckpt->RestoreLatest();
    if (!r.ok() || !r->has_value()) return;
    restored[rank] = (*r)->step;
    mismatch[rank] = state.Mismatch(restored[rank] * 10 + rank);
  });
  EXPECT_THAT(restored, ElementsAre(2, 2, 2)) << log_.Text();
  EXPECT_THAT(mismatch, ElementsAre("", "", ""));
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/step-2/rank-" + std::to_string(r) + ".shard"));
  }
  EXPECT_THAT(ReadFile(dir + "/step-2/MANIFEST"), HasSubstr("world_size 3\n"));
}

}  // namespace
}  // namespace baton::checkpoint
