// Gangs by the switch tree end to end (docs/topology.md): four namespace nodes in two
// leaves of two, labelled by their agents; the coordinator's policy names the leaf level.
#include <unistd.h>

#include <fstream>
#include <set>

#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"
#include "tests/util/security.h"

namespace baton::testing {
namespace {

class TopologyNetns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    policy_ = "/tmp/baton-topology-policy-" + std::to_string(getpid()) + ".yaml";
    std::ofstream(policy_) << TestPolicyYaml() << "topology:\n  levels: [leaf]\n";
    cluster_ = new NetnsCluster(/*nodes=*/4, /*gpus=*/2, "--policy " + policy_, "topo",
                                /*ha_replicas=*/0, {{"BATON_NETNS_LEAF_SIZE", "2"}});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    unlink(policy_.c_str());
  }
  void SetUp() override {
    if (!cluster_->ok()) GTEST_SKIP() << "no namespace cluster here: " << cluster_->why();
  }

  // A job of alice's that holds `gpus` GPUs of node n<node> until cancelled.
  uint64_t Sleeper(int node, int gpus) {
    CommandResult r =
        cluster_->Baton({"submit", "-q", "--gpus", std::to_string(gpus), "--selector",
                         "baton.io/node=n" + std::to_string(node), "--", "sleep", "600"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    uint64_t id = ClusterClient::SubmittedId(r.out);
    EXPECT_TRUE(cluster_->WaitForState(id, "JOB_STATE_RUNNING")) << cluster_->Describe(id);
    return id;
  }
  void CancelAll(const std::vector<uint64_t>& ids) {
    for (uint64_t id : ids) cluster_->Baton({"cancel", std::to_string(id)});
    for (uint64_t id : ids) EXPECT_TRUE(cluster_->WaitForState(id, "JOB_STATE_CANCELLED"));
  }
  static std::set<std::string> Nodes(const v1::Attempt& a) {
    std::set<std::string> out;
    for (const auto& p : a.placement()) out.insert(p.node());
    return out;
  }

  static std::string policy_;
  static NetnsCluster* cluster_;
};
std::string TopologyNetns::policy_;
NetnsCluster* TopologyNetns::cluster_ = nullptr;

TEST_F(TopologyNetns, AGangLandsUnderOneLeafAndARequiredOneRunsSpreadAfterItsWait) {
  ASSERT_TRUE(cluster_->WaitForReadyNodes(4, std::chrono::seconds(30)));
  // n2 (leaf-1) and n3 (leaf-2) each half busy: best fit alone would take exactly those
  // two, one per leaf. Asked for a leaf, the gang takes both nodes of one leaf.
  std::vector<uint64_t> sleepers = {Sleeper(2, 1), Sleeper(3, 1)};
  CommandResult r = cluster_->Baton(
      {"submit", "-q", "--nodes", "2", "--gpus", "1", "--topology", "leaf", "--", "sleep", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  uint64_t gang = ClusterClient::SubmittedId(r.out);
  ASSERT_TRUE(cluster_->WaitForState(gang, "JOB_STATE_RUNNING")) << cluster_->Describe(gang);
  std::optional<v1::Job> job = cluster_->GetJob(gang);
  ASSERT_TRUE(job && job->attempts_size() == 1);
  std::set<std::string> nodes = Nodes(job->attempts(0));
  EXPECT_TRUE(nodes == (std::set<std::string>{"n1", "n2"}) ||
              nodes == (std::set<std::string>{"n3", "n4"}))
      << cluster_->Describe(gang);
  ASSERT_EQ(job->attempts(0).topology_domains_size(), 1) << cluster_->Describe(gang);
  sleepers.push_back(gang);
  CancelAll(sleepers);

  // n2 and n3 full: one free node per leaf. A required 2-node gang waits, saying for
  // what, until its 5 s wait is over; then it runs over both leaves.
  sleepers = {Sleeper(2, 2), Sleeper(3, 2)};
  r = cluster_->Baton({"submit", "-q", "--nodes", "2", "--gpus", "2", "--topology",
                       "leaf:required@5s", "--", "sleep", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  uint64_t waiting = ClusterClient::SubmittedId(r.out);
  CommandResult explain = cluster_->Baton({"explain", std::to_string(waiting)});
  ASSERT_TRUE(cluster_->WaitForState(waiting, "JOB_STATE_RUNNING", std::chrono::seconds(30)))
      << cluster_->Describe(waiting);
  job = cluster_->GetJob(waiting);
  ASSERT_TRUE(job && job->attempts_size() == 1);
  EXPECT_GE(job->attempts(0).scheduled_ms() - job->submitted_ms(), 5000)
      << "it ran before its wait was over";
  EXPECT_EQ(Nodes(job->attempts(0)), (std::set<std::string>{"n1", "n4"}));
  EXPECT_EQ(job->attempts(0).topology_domains_size(), 2);
  // Asked while it waited (the coordinator passes every 500 ms or so, and the wait is 5 s).
  EXPECT_NE(explain.out.find("it needs one leaf"), std::string::npos) << explain.out << explain.err;
  CommandResult status = cluster_->Baton({"status", std::to_string(waiting)});
  EXPECT_NE(status.out.find("topology: spans leaf-1, leaf-2 (2 domains; 1 at best)"),
            std::string::npos)
      << status.out;
  sleepers.push_back(waiting);
  CancelAll(sleepers);
}

// `baton nodes -o wide` shows each node's path; a level the policy lacks is refused.
TEST_F(TopologyNetns, ALevelThePolicyDoesNotNameIsRefusedAtSubmit) {
  CommandResult wide = cluster_->Baton({"nodes", "-o", "wide"});
  EXPECT_NE(wide.out.find("TOPOLOGY"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find(" leaf-2 "), std::string::npos) << wide.out;
  CommandResult r = cluster_->Baton(
      {"submit", "--nodes", "2", "--topology", "spine:required", "--", "sleep", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("topology level 'spine' is not one of the policy's topology.levels (leaf)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace baton::testing
