// train_mlp_direct: train_mlp without MPI, its ranks started with torchrun-style variables
// as baton's direct mode starts them, talking over TCP on loopback. Its weights equal
// mpirun's train_mlp for the same flags and ranks, and an eviction of one rank (SIGUSR1)
// saves on every rank and resumes to the uninterrupted run's weights.
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

const std::vector<std::string> kFlags = {"--steps", "30", "--save-every", "10"};

// One attempt: `world` ranks of train_mlp_direct on loopback, each logging to
// <dir>/<tag>-rank-R.out.
class DirectRun {
 public:
  DirectRun(const TempDir& dir, const std::string& tag, int world,
            const std::vector<std::string>& extra_flags) {
    static int next_port = 21000 + getpid() % 8000;
    std::string port = std::to_string(next_port++);
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> argv = {Bin("train_mlp_direct"), "--checkpoint-dir",
                                       dir.Sub("ckpt")};
      argv.insert(argv.end(), kFlags.begin(), kFlags.end());
      argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
      std::string prefix = dir.Sub(tag + "-rank-" + std::to_string(r));
      logs_.push_back(prefix + ".out");
      ranks_.push_back(std::make_unique<Subprocess>(
          argv,
          std::map<std::string, std::string>{{"RANK", std::to_string(r)},
                                             {"WORLD_SIZE", std::to_string(world)},
                                             {"MASTER_ADDR", "127.0.0.1"},
                                             {"MASTER_PORT", port}},
          prefix));
    }
  }
  // Every rank's exit code, rank 0's output.
  std::string Wait(std::vector<int>* codes) {
    for (auto& r : ranks_) codes->push_back(r->Wait(std::chrono::seconds(120)).value_or(-1));
    return ReadFile(logs_[0]);
  }
  Subprocess& rank(int r) { return *ranks_[r]; }
  const std::string& log(int r) const { return logs_[r]; }

 private:
  std::vector<std::unique_ptr<Subprocess>> ranks_;
  std::vector<std::string> logs_;
};

std::string UninterruptedDirectHash(int world) {
  TempDir dir;
  DirectRun run(dir, "whole", world, {});
  std::vector<int> codes;
  std::string log = run.Wait(&codes);
  for (int c : codes) EXPECT_EQ(c, 0) << log;
  EXPECT_NE(log.find("gradients all-reduced with tcp"), std::string::npos) << log;
  return TrainMlpFinalHash(log);
}

TEST(TrainMlpDirect, EndsWithTheWeightsOfMpirunsTrainMlp) {
  if (access(Bin("train_mlp").c_str(), X_OK) != 0 || system("command -v mpirun >/dev/null")) {
    GTEST_SKIP() << "no MPI build of train_mlp or no mpirun to compare with";
  }
  for (int world : {2, 3}) {
    std::string mpi = UninterruptedTrainMlpHash(kFlags, world);
    ASSERT_FALSE(mpi.empty()) << world << " ranks under mpirun";
    EXPECT_EQ(UninterruptedDirectHash(world), mpi) << world << " ranks";
  }
}

TEST(TrainMlpDirect, AnEvictedRankSavesEverywhereAndResumesToTheSameWeights) {
  TempDir dir;
  {
    DirectRun run(dir, "first", /*world=*/2, {"--step-ms", "20"});
    ASSERT_TRUE(WaitFor([&] { return ReadFile(run.log(0)).find("step 5 ") != std::string::npos; },
                        std::chrono::seconds(60)));
    run.rank(1).Signal(SIGUSR1);  // only one rank hears it; both must stop at one step
    std::vector<int> codes;
    std::string log = run.Wait(&codes);
    EXPECT_EQ(codes, (std::vector<int>{0, 0})) << log;
    ASSERT_NE(log.find("evicted: saved step"), std::string::npos) << log;
    EXPECT_EQ(TrainMlpFinalHash(log), "") << "stopped before the end";
  }
  DirectRun second(dir, "second", /*world=*/2, {});
  std::vector<int> codes;
  std::string log = second.Wait(&codes);
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << log;
  EXPECT_NE(log.find("restored step"), std::string::npos) << log;
  EXPECT_EQ(TrainMlpFinalHash(log), UninterruptedDirectHash(2));
}

TEST(TrainMlpDirect, RefusesAnUnknownReducer) {
  CommandResult r = RunProcess({Bin("train_mlp_direct"), "--reducer", "gloo"}, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--reducer is auto, nccl or host"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace baton::testing
