// The eviction story as a test, on a namespace cluster whose policy evicts at once and
// cools down briefly: train_mlp fills the cluster; an inference job arrives; training
// checkpoints and yields; inference runs; training waits its cooldown, resumes at the
// committed step and ends with the weights of an uninterrupted run. A witness the
// launcher does not control (train_mlp's WITNESS file) shows attempts never overlapped.
#include <sys/stat.h>

#include <regex>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

class Eviction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("baton-evict");
    MakeShared(dir_->path());  // the job (alice's) makes its checkpoint dir here
    cluster_ = new NetnsCluster(/*nodes=*/2, /*gpus=*/2,
                                EvictAtOncePolicy(dir_->Sub("policy.yaml"), "3s"), "e");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
  }
  static TempDir* dir_;
  static NetnsCluster* cluster_;
};
TempDir* Eviction::dir_ = nullptr;
NetnsCluster* Eviction::cluster_ = nullptr;

TEST_F(Eviction, InferenceEvictsTrainingWhichResumesAtItsCheckpointWithNothingLost) {
  std::string ckpt = dir_->Sub("ckpt");
  std::vector<std::string> flags = {"--steps", "120", "--save-every", "25"};
  std::vector<std::string> args = TrainMlpGangSubmit(ckpt, "20s", flags);
  args.insert(args.end(), {"--step-ms", "50"});
  uint64_t train = ClusterClient::SubmittedId(cluster_->Baton(args).out);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(train)}).out.find("step 12 ") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));

  uint64_t serve = SubmitInference(*cluster_);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_COOLDOWN"))
      << "training checkpoints and yields:\n"
      << cluster_->Baton({"queue", "--all"}).out
      << cluster_->Baton({"status", std::to_string(train)}).out
      << cluster_->Baton({"explain", std::to_string(serve)}).out
      << ReadFile(cluster_->state_dir() + "/coordinator.log").substr(0, 2000);
  ASSERT_TRUE(cluster_->WaitForState(serve, "JOB_STATE_RUNNING")) << "inference gets the room";
  std::string log1 = cluster_->Baton({"logs", std::to_string(train), "--attempt", "1"}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log1, m, std::regex("evicted: saved step (\\d+)"))) << log1;
  std::string saved = m[1];
  std::string status = cluster_->Baton({"status", std::to_string(train)}).out;
  EXPECT_NE(status.find("evictions 1"), std::string::npos) << status;
  EXPECT_NE(status.find("resumes from step " + saved), std::string::npos) << status;

  ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(serve)}, kRoot).exit_code, 0);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(90)));
  std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("restored step " + saved), std::string::npos) << log2;
  EXPECT_NE(log2.find("step " + std::to_string(std::stoi(saved) + 1) + " loss"), std::string::npos);

  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags))
      << "nothing lost or repeated";

  std::string witness = ReadFile(ckpt + "/WITNESS");
  EXPECT_EQ(AttemptSpans(witness).size(), 2u) << witness;
  EXPECT_EQ(WitnessOverlap(witness), "") << witness;
}

// Issue 49: a task of an array is a job like any other. Task 0 of a two-task array (each
// task a gang that fills the cluster) is evicted mid-way and resumes from its own
// checkpoint (%a: ckpt/0), task 1 runs from the start in ckpt/1; both end with the
// weights of an uninterrupted run.
TEST_F(Eviction, AnEvictedArrayTaskResumesFromItsOwnCheckpoint) {
  const std::string ckpt = dir_->Sub("ckpt-array");
  ASSERT_EQ(mkdir(ckpt.c_str(), 0755), 0);
  MakeShared(ckpt);
  std::vector<std::string> flags = {"--steps", "100", "--save-every", "20"};
  std::vector<std::string> args = TrainMlpGangSubmit(ckpt + "/%a", "20s", flags);
  args.insert(args.begin() + 2, {"--array", "0-1", "--restart", "never"});
  args.insert(args.end(), {"--step-ms", "50"});
  CommandResult sub = cluster_->Baton(args);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const uint64_t array = ClusterClient::SubmittedId(sub.out);
  ASSERT_NE(array, 0u) << sub.out;
  const uint64_t task0 = array + 1, task1 = array + 2;  // ids: array + 1 + position
  ASSERT_TRUE(cluster_->WaitForState(task0, "JOB_STATE_RUNNING"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(array) + "_0"}).out.find("step 10 ") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));
  const uint64_t serve = SubmitInference(*cluster_);
  ASSERT_TRUE(cluster_->WaitForState(task0, "JOB_STATE_COOLDOWN")) << cluster_->Describe(task0);
  ASSERT_TRUE(cluster_->WaitForState(serve, "JOB_STATE_RUNNING"));
  std::string log1 = cluster_->Baton({"logs", std::to_string(task0), "--attempt", "1"}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log1, m, std::regex("evicted: saved step (\\d+)"))) << log1;
  const std::string saved = m[1];
  ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(serve)}, kRoot).exit_code, 0);
  // Task 1 may go first while task 0 cools down: either order, both end.
  for (uint64_t task : {task0, task1}) {
    ASSERT_TRUE(cluster_->WaitForState(task, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
        << cluster_->Describe(task);
  }
  const std::string log0 = cluster_->Baton({"logs", std::to_string(array) + "_0"}).out;
  EXPECT_NE(log0.find("restored step " + saved), std::string::npos) << log0;
  const std::string log_1 = cluster_->Baton({"logs", std::to_string(array) + "_1"}).out;
  EXPECT_EQ(log_1.find("restored step"), std::string::npos) << "task 1 starts fresh: " << log_1;
  const std::string uninterrupted = UninterruptedTrainMlpHash(flags);
  EXPECT_EQ(TrainMlpFinalHash(log0), uninterrupted) << "nothing lost or repeated";
  EXPECT_EQ(TrainMlpFinalHash(log_1), uninterrupted);
  EXPECT_EQ(AttemptSpans(ReadFile(ckpt + "/0/WITNESS")).size(), 2u) << "two attempts in ckpt/0";
  EXPECT_EQ(AttemptSpans(ReadFile(ckpt + "/1/WITNESS")).size(), 1u) << "one in ckpt/1";
  CommandResult status = cluster_->Baton({"status", std::to_string(array)});
  EXPECT_NE(status.out.find("2 succeeded"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace baton::testing
