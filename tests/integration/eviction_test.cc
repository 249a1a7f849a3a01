// The eviction story as a test, on a namespace cluster whose policy evicts at once and
// cools down briefly: train_mlp fills the cluster; an inference job arrives; training
// checkpoints and yields; inference runs; training waits its cooldown, resumes at the
// committed step and ends with the weights of an uninterrupted run. A witness the
// launcher does not control (train_mlp's WITNESS file) shows attempts never overlapped.
#include <fstream>
#include <regex>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

// (attempt, start ms, end ms) per attempt, from "start|end attempt A rank R time T" lines:
// an attempt spans its first start to its last end.
std::map<int, std::pair<int64_t, int64_t>> AttemptSpans(const std::string& witness) {
  std::map<int, std::pair<int64_t, int64_t>> spans;
  std::istringstream in(witness);
  std::string event, w1, w2;
  int attempt, rank;
  int64_t t;
  while (in >> event >> w1 >> attempt >> w2 >> rank >> w2 >> t) {
    auto [it, fresh] = spans.try_emplace(attempt, t, t);
    if (event == "start") it->second.first = std::min(it->second.first, t);
    if (event == "end") it->second.second = std::max(it->second.second, t);
  }
  return spans;
}

class Eviction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("baton-evict");
    std::ofstream(dir_->Sub("policy.yaml"))
        << "classes:\n"
           "  - {name: inference, value: 900, service: true}\n"
           "  - {name: training, value: 300, cooldown: 3s, cooldown_cap: 1m, min_runtime: 0s}\n";
    cluster_ =
        new NetnsCluster(/*nodes=*/2, /*gpus=*/2, "--policy " + dir_->Sub("policy.yaml"), "e");
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
  std::vector<std::string> args = {"submit",           "-q",  "--class", "training",
                                   "--mode",           "mpi", "--nodes", "2",
                                   "--ranks-per-node", "2",   "--gpus",  "2",
                                   "--cpus",           "1",   "--grace", "20s",
                                   "--checkpoint-dir", ckpt,  "--",      Bin("train_mlp")};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--step-ms", "50"});
  uint64_t train = ClusterClient::SubmittedId(cluster_->Baton(args).out);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster_->Baton({"logs", std::to_string(train)}).out.find("step 12 ") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));

  uint64_t serve =
      ClusterClient::SubmittedId(cluster_
                                     ->Baton({"submit", "-q", "--class", "inference", "--gpus", "2",
                                              "--cpus", "1", "--", "sleep", "600"},
                                             {{"BATON_USER", "bob"}, {"BATON_TENANT", "serving"}})
                                     .out);
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

  ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(serve)}, {{"BATON_ROLE", "admin"}}).exit_code,
            0);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(90)));
  std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("restored step " + saved), std::string::npos) << log2;
  EXPECT_NE(log2.find("step " + std::to_string(std::stoi(saved) + 1) + " loss"), std::string::npos);

  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags))
      << "nothing lost or repeated";

  auto spans = AttemptSpans(ReadFile(ckpt + "/WITNESS"));
  ASSERT_EQ(spans.size(), 2u) << ReadFile(ckpt + "/WITNESS");
  EXPECT_LT(spans[1].second, spans[2].first) << "attempt 2 started after attempt 1 ended";
}

}  // namespace
}  // namespace baton::testing
