// The eviction story for a PyTorch job: examples/pytorch_ddp (the baton Python package,
// gloo) on a namespace cluster, 2 nodes x 2 ranks in direct mode with nothing but the
// agent's torchrun-style env, is evicted by an inference job between two periodic saves;
// every rank saves the step they agreed on, the job cools down, resumes there and ends
// with exactly the parameters of an uninterrupted run (hash compared). Needs root (the
// namespace cluster) and Debian's python3-torch; skips with the reason otherwise.
#include <unistd.h>

#include <regex>
#include <set>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"

namespace baton::testing {
namespace {

const std::string kScript = std::string(BATON_SOURCE_DIR) + "/examples/pytorch_ddp/train.py";
const std::vector<std::string> kFlags = {"--steps", "120", "--save-every", "25", "--hidden", "64"};

std::string FinalHash(const std::string& log) {
  std::smatch m;
  return std::regex_search(log, m, std::regex("final_hash ([0-9a-f]{64})")) ? m[1].str() : "";
}

// The example on 4 local ranks with torchrun-style env over loopback, uninterrupted.
std::string UninterruptedHash() {
  TempDir dir;
  std::string cmd =
      "for r in 0 1 2 3; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 "
      "MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT BATON_CHECKPOINT_DIR=" +
      dir.path() + "/ckpt " + BATON_PYTHON + " " + kScript;
  for (const std::string& f : kFlags) cmd += " " + f;
  cmd += " > " + dir.path() + "/rank-$r.log 2>&1 & pids=\"$pids $!\"; done; " +
         "for p in $pids; do wait $p || exit 1; done; cat " + dir.path() + "/rank-0.log";
  CommandResult r = RunProcess({"/bin/sh", "-c", cmd},
                               {{"PORT", std::to_string(20000 + getpid() % 10000)},
                                {"PYTHONPATH", BATON_PYTHON_DIR},
                                {"OMP_NUM_THREADS", "1"}},
                               std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return FinalHash(r.out);
}

class PytorchEviction : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("baton-torch-evict");
    MakeShared(dir_->path());  // the job (alice's) makes its checkpoint dir here
    cluster_ = new NetnsCluster(/*nodes=*/2, /*gpus=*/2,
                                EvictAtOncePolicy(dir_->Sub("policy.yaml"), "3s"), "t");
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete dir_;
  }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
    if (RunProcess({BATON_PYTHON, "-c", "import torch"}, {}).exit_code != 0) {
      GTEST_SKIP() << BATON_PYTHON << " cannot import torch (Debian: python3-torch)";
    }
  }
  static TempDir* dir_;
  static NetnsCluster* cluster_;
};
TempDir* PytorchEviction::dir_ = nullptr;
NetnsCluster* PytorchEviction::cluster_ = nullptr;

TEST_F(PytorchEviction, DdpExampleCheckpointsTheAgreedStepAndResumesExactly) {
  const std::string ckpt = dir_->Sub("ckpt");
  std::vector<std::string> args = {"submit",
                                   "-q",
                                   "--class",
                                   "training",
                                   "--mode",
                                   "direct",
                                   "--nodes",
                                   "2",
                                   "--ranks-per-node",
                                   "2",
                                   "--gpus",
                                   "2",
                                   "--cpus",
                                   "1",
                                   "--grace",
                                   "30s",
                                   "--env",
                                   std::string("PYTHONPATH=") + BATON_PYTHON_DIR,
                                   "--env",
                                   "OMP_NUM_THREADS=1",
                                   "--checkpoint-dir",
                                   ckpt,
                                   "--",
                                   BATON_PYTHON,
                                   kScript};
  args.insert(args.end(), kFlags.begin(), kFlags.end());
  args.insert(args.end(), {"--step-ms", "50"});
  const uint64_t train = ClusterClient::SubmittedId(cluster_->Baton(args).out);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_RUNNING")) << cluster_->Describe(train);
  ASSERT_TRUE(WaitFor(
      [&] {  // after the periodic save of step 24, well before that of step 49
        return cluster_->Baton({"logs", std::to_string(train)}).out.find("step 30 ") !=
               std::string::npos;
      },
      std::chrono::seconds(60)))
      << cluster_->Describe(train);

  const uint64_t serve = SubmitInference(*cluster_);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_COOLDOWN"))
      << "training checkpoints and yields:\n"
      << cluster_->Describe(train);
  ASSERT_TRUE(cluster_->WaitForState(serve, "JOB_STATE_RUNNING")) << "inference gets the room";
  // Both ranks of the first node saved the same step (the other node's are in its log).
  const std::string log1 = cluster_->Baton({"logs", std::to_string(train), "--attempt", "1"}).out;
  std::set<std::string> saved;
  const std::regex evicted("rank \\d: evicted, saved step (\\d+)");
  for (std::sregex_iterator it(log1.begin(), log1.end(), evicted), end; it != end; ++it) {
    saved.insert((*it)[1]);
  }
  ASSERT_EQ(saved.size(), 1u) << log1;
  const std::string step = *saved.begin();
  EXPECT_GE(std::stoi(step), 30) << log1;
  EXPECT_LT(std::stoi(step), 49) << "saved between two periodic saves:\n" << log1;
  const std::string status = cluster_->Baton({"status", std::to_string(train)}).out;
  EXPECT_NE(status.find("resumes from step " + step), std::string::npos) << status;

  ASSERT_EQ(cluster_->Baton({"cancel", std::to_string(serve)}, kRoot).exit_code, 0);
  ASSERT_TRUE(cluster_->WaitForState(train, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
      << cluster_->Describe(train);
  const std::string log2 = cluster_->Baton({"logs", std::to_string(train)}).out;
  EXPECT_NE(log2.find("start at step " + std::to_string(std::stoi(step) + 1) + " (restored " +
                      step + ")"),
            std::string::npos)
      << log2;
  EXPECT_EQ(FinalHash(log2), UninterruptedHash()) << "nothing lost or repeated:\n" << log2;
}

}  // namespace
}  // namespace baton::testing
