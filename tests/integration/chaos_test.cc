// A small chaos run on a 3-node namespace cluster whose policy evicts at once: a
// train_mlp gang trains while inference jobs arrive and leave (evicting it), and the
// coordinator and the agents are kill -9'ed and restarted at random moments. At the end
// every job is accounted for, train_mlp's WITNESS shows no two attempts overlapped, and
// the training job ends with the weights of an uninterrupted run. The seed is printed.
// CI runs a small one (25 s). BATON_CHAOS_KILLS=N runs until the coordinator and the
// agents were each killed at least N times (bounded to 10 minutes), with a new training
// job submitted whenever the last one has finished; every one must end with the hash.
#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

// Runs `baton ARGS` until it succeeds (the coordinator may be restarting).
bool Retry(NetnsCluster& c, const std::vector<std::string>& args) {
  return WaitFor([&] { return c.Baton(args, kRoot).exit_code == 0; }, std::chrono::seconds(20));
}

TEST(Chaos, KillsAndEvictionsNeverLoseADoubleRunOrCorruptATrainingJob) {
  TempDir dir("baton-chaos");
  MakeShared(dir.path());  // the jobs (alice's) make their checkpoint dirs here
  NetnsCluster cluster(/*nodes=*/3, /*gpus=*/2, EvictAtOncePolicy(dir.Sub("policy.yaml"), "1s"),
                       "c");
  if (!cluster.ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster.why();
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));

  const char* kills_env = std::getenv("BATON_CHAOS_KILLS");
  const int min_kills = kills_env ? std::atoi(kills_env) : 0;
  std::vector<std::string> flags = {"--steps", "300", "--save-every", "20"};
  std::vector<std::pair<uint64_t, std::string>> trainings;  // job, its checkpoint dir
  auto submit_training = [&] {
    std::string ckpt = dir.Sub("ckpt" + std::to_string(trainings.size()));
    std::vector<std::string> args = TrainMlpGangSubmit(ckpt, "10s", flags);
    args.insert(args.end(), {"--step-ms", "40"});
    uint64_t id = 0;
    WaitFor(
        [&] {
          id = ClusterClient::SubmittedId(cluster.Baton(args).out);
          return id != 0;
        },
        std::chrono::seconds(20));
    if (id != 0) trainings.emplace_back(id, ckpt);
    return id;
  };
  uint64_t train = submit_training();
  ASSERT_NE(train, 0u);
  ASSERT_TRUE(cluster.WaitForState(train, "JOB_STATE_RUNNING")) << cluster.Describe(train);

  std::vector<uint64_t> serving;
  int coordinator_kills = 0, agent_kills = 0;
  const auto start = std::chrono::steady_clock::now();
  auto more = [&] {
    auto now = std::chrono::steady_clock::now();
    if (min_kills == 0) return now < start + std::chrono::seconds(25);
    return now < start + std::chrono::minutes(10) &&
           (coordinator_kills < min_kills || agent_kills < min_kills);
  };
  while (more()) {
    if (min_kills > 0 && cluster.StateOf(trainings.back().first) == "JOB_STATE_SUCCEEDED") {
      submit_training();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 1200));
    switch (rng() % 4) {
      case 0:
        ASSERT_TRUE(cluster.RestartCoordinator("KILL"));
        ++coordinator_kills;
        break;
      case 1:
        ASSERT_TRUE(cluster.RestartAgent(1 + static_cast<int>(rng() % 3), "KILL"));
        ++agent_kills;
        break;
      case 2: {
        uint64_t id = SubmitInference(cluster);
        if (id != 0) serving.push_back(id);
        break;
      }
      default:
        if (!serving.empty()) {
          Retry(cluster, {"cancel", std::to_string(serving[rng() % serving.size()])});
        }
    }
  }
  for (uint64_t id : serving) EXPECT_TRUE(Retry(cluster, {"cancel", std::to_string(id)}));
  EXPECT_GE(coordinator_kills, min_kills);
  EXPECT_GE(agent_kills, min_kills);
  const std::string reference = UninterruptedTrainMlpHash(flags);
  size_t attempts = 0;
  for (const auto& [job, ckpt] : trainings) {
    ASSERT_TRUE(cluster.WaitForState(job, "JOB_STATE_SUCCEEDED", std::chrono::seconds(120)))
        << coordinator_kills << " coordinator and " << agent_kills << " agent kills"
        << cluster.Describe(job);
    std::string log = cluster.Baton({"logs", std::to_string(job)}).out;
    EXPECT_EQ(TrainMlpFinalHash(log), reference) << "job " << job;
    std::string witness = ReadFile(ckpt + "/WITNESS");
    EXPECT_EQ(WitnessOverlap(witness), "") << "job " << job << ":\n" << witness;
    attempts += AttemptSpans(witness).size();
  }
  for (uint64_t id : serving) {
    EXPECT_TRUE(cluster.WaitForState(id, "JOB_STATE_CANCELLED")) << cluster.Describe(id);
  }
  std::printf(
      "chaos: %d coordinator kills, %d agent kills, %zu inference jobs, %zu training jobs, "
      "%zu training attempts\n",
      coordinator_kills, agent_kills, serving.size(), trainings.size(), attempts);
}

}  // namespace
}  // namespace baton::testing
