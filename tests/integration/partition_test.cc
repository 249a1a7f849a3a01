// Fencing across a network partition, on a 3-node namespace cluster (agent lease 4 s, node
// lost for new work after 4 + 2 s; training stops 3 s after its agent loses the
// coordinator, with a 10 s grace): a node of a 2-node training gang is cut off the cluster
// network (its veth taken down). Its agent keeps the job through its lease, then stops it
// (SIGUSR1, grace, kill: across the cut the gang cannot agree on a step, so the kill ends
// it); the coordinator replaces the attempt only after stop + grace + margin, and the job
// resumes on the other two nodes from its last checkpoint. train_mlp's WITNESS shows the
// two attempts never ran at the same time, and the job ends with the weights of an
// uninterrupted run. Healed, the node comes back.
#include <chrono>
#include <fstream>
#include <regex>

#include "gtest/gtest.h"
#include "tests/integration/eviction_jobs.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/witness.h"

namespace baton::testing {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(Partition, ACutOffNodeStopsItsJobWithinItsBoundAndTheJobResumesElsewhereOnce) {
  TempDir dir("baton-partition");
  MakeShared(dir.path());  // the job (alice's) makes its checkpoint dir here
  std::ofstream(dir.Sub("policy.yaml"))
      << "classes:\n"
         "  - {name: training, value: 300, min_runtime: 0s, stop_after_disconnect: 3s}\n"
      << TestPolicyAccess();
  NetnsCluster cluster(/*nodes=*/3, /*gpus=*/2, "--policy " + dir.Sub("policy.yaml"), "p");
  if (!cluster.ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster.why();
  constexpr int64_t kStopMs = 3000, kGraceMs = 10'000, kMarginMs = 2000;  // netns-cluster.sh

  std::string ckpt = dir.Sub("ckpt");
  std::vector<std::string> flags = {"--steps", "160", "--save-every", "10"};
  std::vector<std::string> args = TrainMlpGangSubmit(ckpt, "10s", flags);  // 2 of 3 nodes
  args.insert(args.end(), {"--step-ms", "60"});
  uint64_t job = ClusterClient::SubmittedId(cluster.Baton(args).out);
  ASSERT_TRUE(cluster.WaitForState(job, "JOB_STATE_RUNNING")) << cluster.Describe(job);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = cluster.GetJob(job);
        return j && j->attempts_size() == 1 && j->attempts(0).checkpoint_step() >= 20;
      },
      std::chrono::seconds(60)))
      << "a periodic checkpoint is reported" << cluster.Describe(job);
  std::string node = cluster.GetJob(job)->attempts(0).placement(0).node();
  ASSERT_EQ(node.rfind("n", 0), 0u) << node;
  int cut = std::stoi(node.substr(1));

  const int64_t cut_ms = NowMs();
  ASSERT_TRUE(cluster.Partition(cut));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = cluster.GetJob(job);
        return j && j->attempts_size() == 2 && j->state() == v1::JOB_STATE_RUNNING;
      },
      std::chrono::seconds(60)))
      << "requeued and relaunched after the node was lost" << cluster.Describe(job);
  v1::Job j = *cluster.GetJob(job);
  const v1::Attempt& first = j.attempts(0);
  EXPECT_NE(first.end_reason().find("node " + node + " lost"), std::string::npos)
      << first.end_reason();
  EXPECT_GE(first.ended_ms() - cut_ms, kStopMs + kGraceMs + kMarginMs)
      << "not replaced before its agent had stopped it";
  for (const auto& p : j.attempts(1).placement()) {
    EXPECT_NE(p.node(), node) << "resumed without the lost node";
  }
  ASSERT_TRUE(cluster.Heal(cut));

  ASSERT_TRUE(cluster.WaitForState(job, "JOB_STATE_SUCCEEDED", std::chrono::seconds(90)))
      << cluster.Describe(job);
  std::string log2 = cluster.Baton({"logs", std::to_string(job)}).out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log2, m, std::regex("restored step (\\d+)"))) << log2;
  EXPECT_GE(std::stoll(m[1]), first.checkpoint_step()) << "from its last checkpoint";
  EXPECT_EQ(TrainMlpFinalHash(log2), UninterruptedTrainMlpHash(flags));

  std::string witness = ReadFile(ckpt + "/WITNESS");
  auto spans = AttemptSpans(witness);
  ASSERT_EQ(spans.size(), 2u) << witness;
  EXPECT_EQ(WitnessOverlap(witness), "") << witness;
  // The ranks write "alive" every second: nothing from attempt 1 after its stop + grace
  // (plus that second and the agent's reaction) means its agent ended it in time.
  EXPECT_LE(spans[1].last - cut_ms, kStopMs + kGraceMs + 2500) << witness;

  // Back on the network, the node registers again.
  EXPECT_TRUE(cluster.WaitForReadyNodes(3, std::chrono::seconds(30)));
}

}  // namespace
}  // namespace baton::testing
