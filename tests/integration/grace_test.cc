// The grace period of an eviction, end to end on a namespace cluster whose policy evicts
// at once: a job that ignores SIGUSR1 is killed at its deadline and resumes from its last
// periodic checkpoint, with the work it lost shown by `baton status`; a job whose
// checkpoint outlasts the grace gets the deadline extended while it writes, commits the
// eviction's step and resumes there, losing nothing. Both end with the weights of an
// uninterrupted run, and train_mlp's WITNESS shows the attempts never overlapped.
#include <cstdio>
#include <regex>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

class Grace : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("baton-grace");
    MakeShared(dir_->path());  // the jobs (alice's) make their checkpoint dirs here
    cluster_ = new NetnsCluster(/*nodes=*/2, /*gpus=*/2,
                                EvictAtOncePolicy(dir_->Sub("policy.yaml"), "1s"), "g");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
  }

  // A 2-node x 2-rank mpi train_mlp holding every GPU of the cluster.
  static uint64_t SubmitTraining(const std::string& ckpt, const std::string& grace,
                                 const std::vector<std::string>& flags,
                                 const std::vector<std::string>& knobs) {
    std::vector<std::string> args = TrainMlpGangSubmit(ckpt, grace, flags);
    args.insert(args.end(), knobs.begin(), knobs.end());
    return ClusterClient::SubmittedId(cluster_->Baton(args).out);
  }
  static bool LogHas(uint64_t job, const std::string& text, const std::string& attempt = "") {
    std::vector<std::string> args = {"logs", std::to_string(job)};
    if (!attempt.empty()) args.insert(args.end(), {"--attempt", attempt});
    return cluster_->Baton(args).out.find(text) != std::string::npos;
  }
  // Lets the evicted job resume: the preemptor goes away.
  static void CancelInference(uint64_t serve) {
    ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(serve)}, kRoot).exit_code, 0);
    ASSERT_TRUE(cluster_->WaitForState(serve, "JOB_STATE_CANCELLED"));
  }

  static TempDir* dir_;
  static NetnsCluster* cluster_;
};
TempDir* Grace::dir_ = nullptr;
NetnsCluster* Grace::cluster_ = nullptr;

TEST_F(Grace, AJobIgnoringTheSignalIsKilledAtTheDeadlineAndResumesFromItsLastCheckpoint) {
  std::string ckpt = dir_->Sub("ignores");
  // A save every 1.5 s: the kill (3 s after the signal) lands a while after the last one.
  std::vector<std::string> flags = {"--steps", "150", "--save-every", "25"};
  uint64_t train = SubmitTraining(ckpt, "3s", flags, {"--step-ms", "60", "--ignore-sigusr1"});
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING")) << cluster_->Describe(train);
  ASSERT_TRUE(WaitFor([&] { return LogHas(train, "step 30 "); }, std::chrono::seconds(60)))
      << cluster_->Describe(train);

  uint64_t serve = SubmitInference(*cluster_);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_PREEMPTING", std::chrono::seconds(20)));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto job = cluster_->GetJob(train);
        return job && job->attempts_size() > 0 && job->attempts(0).ended_ms() != 0;
      },
      std::chrono::seconds(30)))
      << "killed by its deadline: " << cluster_->Describe(train);
  v1::Job job = *cluster_->GetJob(train);
  const v1::Attempt& a = job.attempts(0);
  EXPECT_NE(a.end_reason().find("killed after its grace period"), std::string::npos)
      << a.end_reason();
  EXPECT_GE(a.ended_ms() - a.preempted_ms(), 2900) << "not before the 3 s grace";
  EXPECT_LE(a.ended_ms() - a.preempted_ms(), 9000 + 3000) << "never past the cap (3 graces)";
  EXPECT_FALSE(LogHas(train, "evicted: saved step", "1")) << "it never heard the signal";
  ASSERT_GE(a.checkpoint_step(), 25) << "periodic checkpoints were reported";
  EXPECT_EQ(a.checkpoint_step() % 25, 0);
  EXPECT_GT(a.lost_gpu_seconds(), 0) << "work since the last checkpoint is lost";
  std::string status = cluster_->Baton({"status", std::to_string(train)}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(status, m,
                                std::regex("lost ([0-9.]+) GPU-seconds; resumes from step (\\d+)")))
      << status;
  char shown[32];
  std::snprintf(shown, sizeof shown, "%.1f", a.lost_gpu_seconds());
  EXPECT_EQ(m[1].str(), shown) << "the work lost, as stored: " << status;
  EXPECT_EQ(std::stoll(m[2]), a.checkpoint_step()) << status;

  ASSERT_TRUE(cluster_->WaitForState(serve, "JOB_STATE_RUNNING")) << "the room went to inference";
  CancelInference(serve);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster_->Describe(train);
  std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("restored step " + std::to_string(a.checkpoint_step()) + "\n"),
            std::string::npos)
      << log2.substr(0, 2000);
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags)) << "the lost steps redone";
  std::string witness = ReadFile(ckpt + "/WITNESS");
  EXPECT_EQ(AttemptSpans(witness).size(), 2u) << witness;
  EXPECT_EQ(WitnessOverlap(witness), "") << witness;
}

TEST_F(Grace, ACheckpointOutlastingTheGraceGetsTheExtensionAndLosesNothing) {
  std::string ckpt = dir_->Sub("slow");
  // No periodic saves: the eviction's is the only checkpoint, and each shard's fsync
  // takes 3.5 s, well past the 2 s grace (the cap is 6 s).
  std::vector<std::string> flags = {"--steps", "100", "--save-every", "1000"};
  uint64_t train = SubmitTraining(ckpt, "2s", flags, {"--step-ms", "50", "--slow-save-ms", "3500"});
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING")) << cluster_->Describe(train);
  ASSERT_TRUE(WaitFor([&] { return LogHas(train, "step 12 "); }, std::chrono::seconds(60)))
      << cluster_->Describe(train);

  uint64_t serve = SubmitInference(*cluster_);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_COOLDOWN", std::chrono::seconds(30)))
      << cluster_->Describe(train);
  v1::Job job = *cluster_->GetJob(train);
  const v1::Attempt& a = job.attempts(0);
  EXPECT_NE(a.end_reason().find("checkpointed and exited"), std::string::npos) << a.end_reason();
  EXPECT_GT(a.ended_ms() - a.preempted_ms(), 3500) << "it outlived its 2 s grace";
  EXPECT_GT(a.preempt_deadline_ms(), a.preempted_ms() + 2000) << "the deadline moved";
  EXPECT_LE(a.preempt_deadline_ms(), a.preempted_ms() + 6000) << "but not past the cap";
  EXPECT_EQ(a.lost_gpu_seconds(), 0) << "the eviction's checkpoint holds all the work";
  std::string log1 = cluster_->Baton({"logs", std::to_string(train), "--attempt", "1"}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log1, m, std::regex("evicted: saved step (\\d+)"))) << log1;
  int64_t saved = std::stoll(m[1]);
  EXPECT_EQ(a.checkpoint_step(), saved);
  std::string status = cluster_->Baton({"status", std::to_string(train)}).out;
  EXPECT_NE(status.find("lost 0.0 GPU-seconds; resumes from step " + std::to_string(saved)),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("grace extended by"), std::string::npos) << status;

  CancelInference(serve);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster_->Describe(train);
  std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("restored step " + std::to_string(saved) + "\n"), std::string::npos)
      << log2.substr(0, 2000);
  EXPECT_NE(log2.find("step " + std::to_string(saved + 1) + " loss"), std::string::npos)
      << "no step redone or skipped";
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags));
  std::string witness = ReadFile(ckpt + "/WITNESS");
  EXPECT_EQ(WitnessOverlap(witness), "") << witness;
}

}  // namespace
}  // namespace baton::testing
