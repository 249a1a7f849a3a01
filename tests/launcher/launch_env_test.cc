#include "launcher/agent/launch_env.h"

#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/rank_bind.h"

namespace baton {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Key;
using ::testing::Not;

// A 2-node x 2-rank launch of job 42, attempt 3, as node_rank 1 ("node-b") sees it.
v1::Launch TwoByTwoLaunch() {
  v1::Launch l;
  l.set_job_id(42);
  l.set_attempt(3);
  l.set_node_rank(1);
  l.set_master_port(29500);
  v1::JobSpec* s = l.mutable_spec();
  s->set_name("llama-ft");
  s->set_tenant("vision");
  s->set_nodes(2);
  s->set_ranks_per_node(2);
  s->set_gpus_per_node(2);
  s->set_grace_seconds(45);
  v1::NodeAssignment* a = l.add_placement();
  a->set_node("node-a");
  a->set_node_rank(0);
  a->set_first_rank(0);
  a->set_address("10.0.0.1");
  a->add_gpu_ids("GPU-a-0");
  a->add_gpu_ids("GPU-a-1");
  v1::NodeAssignment* b = l.add_placement();
  b->set_node("node-b");
  b->set_node_rank(1);
  b->set_first_rank(2);
  b->set_address("10.0.0.2");
  b->add_gpu_ids("GPU-b-3");  // deliberately not in index order
  b->add_gpu_ids("GPU-b-1");
  return l;
}

RankEnvInput InputFor(const v1::Launch& l, uint32_t local_rank) {
  RankEnvInput in;
  in.launch = &l;
  in.local_rank = local_rank;
  in.node_name = "node-b";
  in.job_dir = "/var/lib/baton/jobs/42/3";
  in.progress_file = "/var/lib/baton/jobs/42/3/progress.json";
  in.inherited = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/alice"}, {"LANG", "C.UTF-8"}};
  in.known_gpu_ids = {"GPU-b-0", "GPU-b-1", "GPU-b-2", "GPU-b-3"};
  return in;
}

// "NAME=value" entries as a map; fails the test on a duplicate name.
std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& e : env) {
    size_t eq = e.find('=');
    EXPECT_NE(eq, std::string::npos) << e;
    bool inserted = m.emplace(e.substr(0, eq), e.substr(eq + 1)).second;
    EXPECT_TRUE(inserted) << "duplicate " << e;
  }
  return m;
}

std::map<std::string, std::string> EnvFor(const v1::Launch& l, uint32_t local_rank) {
  auto env = BuildRankEnv(InputFor(l, local_rank));
  EXPECT_TRUE(env.ok()) << env.status();
  return env.ok() ? AsMap(*env) : std::map<std::string, std::string>{};
}

TEST(BuildRankEnv, SetsTorchrunRankVariablesForTheSecondNode) {
  v1::Launch l = TwoByTwoLaunch();
  auto r0 = EnvFor(l, /*local_rank=*/0);
  auto r1 = EnvFor(l, /*local_rank=*/1);
  EXPECT_EQ(r0["RANK"], "2");
  EXPECT_EQ(r1["RANK"], "3");
  EXPECT_EQ(r0["LOCAL_RANK"], "0");
  EXPECT_EQ(r1["LOCAL_RANK"], "1");
  for (auto* env : {&r0, &r1}) {
    EXPECT_EQ((*env)["WORLD_SIZE"], "4");
    EXPECT_EQ((*env)["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ((*env)["GROUP_RANK"], "1");
    EXPECT_EQ((*env)["MASTER_ADDR"], "10.0.0.1");  // node 0's address, not ours
    EXPECT_EQ((*env)["MASTER_PORT"], "29500");
  }
}

// NCCL and gloo bind to the cluster interface; without it gloo takes the address the
// hostname resolves to (often loopback) and its peers are refused. The job's own wins.
TEST(BuildRankEnv, CollectivesUseTheClusterInterfaceUnlessTheJobChoseOne) {
  v1::Launch l = TwoByTwoLaunch();
  RankEnvInput in = InputFor(l, 0);
  in.nic = "eth1";
  auto env = BuildRankEnv(in);
  ASSERT_TRUE(env.ok()) << env.status();
  auto vars = AsMap(*env);
  EXPECT_EQ(vars["NCCL_SOCKET_IFNAME"], "eth1");
  EXPECT_EQ(vars["GLOO_SOCKET_IFNAME"], "eth1");
  (*l.mutable_spec()->mutable_env())["GLOO_SOCKET_IFNAME"] = "ib0";
  env = BuildRankEnv(InputFor(l, 0));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(AsMap(*env)["GLOO_SOCKET_IFNAME"], "ib0");
  in = InputFor(l, 0);
  in.nic = "eth1";
  EXPECT_EQ(AsMap(*BuildRankEnv(in))["GLOO_SOCKET_IFNAME"], "ib0");
}

// With --nic-rate the isolation steers NCCL onto the capped NIC's sockets (tc cannot see
// RDMA), but a job that set the variables itself keeps them; MPS limits are enforced.
TEST(BuildRankEnv, NetworkCapsNeverOverrideAVariableTheJobSet) {
  v1::Launch l = TwoByTwoLaunch();
  RankEnvInput in = InputFor(l, 0);
  in.isolation_env = {{"NCCL_IB_DISABLE", "1"},
                      {"NCCL_SOCKET_IFNAME", "eth1"},
                      {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=8192M"}};
  auto vars = AsMap(*BuildRankEnv(in));
  EXPECT_EQ(vars["NCCL_IB_DISABLE"], "1");
  EXPECT_EQ(vars["NCCL_SOCKET_IFNAME"], "eth1");
  auto& env = *l.mutable_spec()->mutable_env();
  env["NCCL_IB_DISABLE"] = "0";
  env["NCCL_SOCKET_IFNAME"] = "ib0";
  env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = "0=80000M";
  vars = AsMap(*BuildRankEnv(in));
  EXPECT_EQ(vars["NCCL_IB_DISABLE"], "0") << "the job's own choice reaches its ranks";
  EXPECT_EQ(vars["NCCL_SOCKET_IFNAME"], "ib0");
  EXPECT_EQ(vars["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], "0=8192M") << "a limit is not the job's";
}

TEST(BuildRankEnv, CudaSeesTheAssignedGpusByUuidInOrder) {
  auto env = EnvFor(TwoByTwoLaunch(), 0);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "GPU-b-3,GPU-b-1");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "GPU-b-3,GPU-b-1");
}

TEST(BuildRankEnv, NoGpusGrantedHidesEveryDevice) {
  v1::Launch l = TwoByTwoLaunch();
  l.mutable_placement(1)->clear_gpu_ids();
  auto env = EnvFor(l, 0);
  ASSERT_TRUE(env.count("CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "none");
}

TEST(BuildRankEnv, UnknownGpuIsInvalidArgumentNamingIt) {
  v1::Launch l = TwoByTwoLaunch();
  l.mutable_placement(1)->add_gpu_ids("GPU-elsewhere-7");
  auto env = BuildRankEnv(InputFor(l, 0));
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(env.status().message()), HasSubstr("GPU-elsewhere-7"));
  EXPECT_THAT(std::string(env.status().message()), HasSubstr("node-b"));
}

TEST(BuildRankEnv, GpusOfOtherNodesInThePlacementAreNotChecked) {
  // Node 0's GPUs are not ours to know; only our own entry is validated.
  v1::Launch l = TwoByTwoLaunch();
  l.mutable_placement(0)->add_gpu_ids("GPU-elsewhere-7");
  EXPECT_TRUE(BuildRankEnv(InputFor(l, 0)).ok());
}

TEST(BuildRankEnv, SpecEnvOverridesInheritedAndBatonOverridesSpec) {
  v1::Launch l = TwoByTwoLaunch();
  (*l.mutable_spec()->mutable_env())["PATH"] = "/opt/venv/bin:/usr/bin";
  (*l.mutable_spec()->mutable_env())["NCCL_DEBUG"] = "INFO";
  (*l.mutable_spec()->mutable_env())["RANK"] = "99";
  (*l.mutable_spec()->mutable_env())["CUDA_VISIBLE_DEVICES"] = "0,1,2,3";
  auto env = EnvFor(l, 0);
  EXPECT_EQ(env["PATH"], "/opt/venv/bin:/usr/bin");
  EXPECT_EQ(env["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(env["HOME"], "/home/alice");
  EXPECT_EQ(env["LANG"], "C.UTF-8");
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "GPU-b-3,GPU-b-1");
}

TEST(BuildRankEnv, SetsBatonVariables) {
  auto env = EnvFor(TwoByTwoLaunch(), 1);
  EXPECT_EQ(env["BATON_JOB_ID"], "42");
  EXPECT_EQ(env["BATON_ATTEMPT"], "3");
  EXPECT_EQ(env["BATON_JOB_NAME"], "llama-ft");
  EXPECT_EQ(env["BATON_TENANT"], "vision");
  EXPECT_EQ(env["BATON_NODE"], "node-b");
  EXPECT_EQ(env["BATON_NODE_RANK"], "1");
  EXPECT_EQ(env["BATON_JOB_DIR"], "/var/lib/baton/jobs/42/3");
  EXPECT_EQ(env["BATON_PROGRESS_FILE"], "/var/lib/baton/jobs/42/3/progress.json");
  EXPECT_EQ(env["BATON_GRACE_SECONDS"], "45");
}

TEST(BuildRankEnv, CheckpointDirOnlyWhenTheSpecHasOne) {
  v1::Launch l = TwoByTwoLaunch();
  EXPECT_THAT(EnvFor(l, 0), Not(Contains(Key("BATON_CHECKPOINT_DIR"))));
  l.mutable_spec()->set_checkpoint_dir("/shared/ckpt/llama");
  EXPECT_EQ(EnvFor(l, 0)["BATON_CHECKPOINT_DIR"], "/shared/ckpt/llama");
}

TEST(BuildRankEnv, ArrayVariablesOnlyForATaskOfAnArray) {
  v1::Launch l = TwoByTwoLaunch();
  EXPECT_THAT(EnvFor(l, 0), Not(Contains(Key("BATON_ARRAY_TASK_ID"))));
  v1::ArrayTask* a = l.mutable_array();
  a->set_array_id(17);
  a->set_index(6);
  a->set_count(32);
  a->set_min(0);
  a->set_max(62);
  a->set_step(2);
  auto env = EnvFor(l, 1);
  EXPECT_EQ(env["BATON_ARRAY_JOB_ID"], "17");
  EXPECT_EQ(env["BATON_ARRAY_TASK_ID"], "6");
  EXPECT_EQ(env["BATON_ARRAY_TASK_COUNT"], "32");
  EXPECT_EQ(env["BATON_ARRAY_TASK_MIN"], "0");
  EXPECT_EQ(env["BATON_ARRAY_TASK_MAX"], "62");
  EXPECT_EQ(env["BATON_ARRAY_TASK_STEP"], "2");
}

TEST(BuildRankEnv, EntriesAreSortedByName) {
  auto env = BuildRankEnv(InputFor(TwoByTwoLaunch(), 0));
  ASSERT_TRUE(env.ok());
  std::vector<std::string> names;
  for (const auto& e : *env) names.push_back(e.substr(0, e.find('=')));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(BuildRankEnv, NodeRankOutsideThePlacementIsAnError) {
  v1::Launch l = TwoByTwoLaunch();
  l.set_node_rank(2);
  auto env = BuildRankEnv(InputFor(l, 0));
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(env.status().message()), HasSubstr("node_rank 2"));
  l.clear_placement();
  l.set_node_rank(0);
  EXPECT_FALSE(BuildRankEnv(InputFor(l, 0)).ok());
}

// mpirun binds nothing itself; each rank's command runs through the bind step first.
TEST(MpirunArgv, RanksRunThroughTheBindStepAndOpenMpiBindsNothing) {
  v1::Launch l = TwoByTwoLaunch();
  l.mutable_spec()->add_command("train");
  l.mutable_spec()->add_command("--fast");
  MpirunInput in{.launch = &l, .exec_command = "/x/baton-exec", .hostfile = "/h"};
  in.rank_prefix = BindRankPrefix();
  std::vector<std::string> argv = MpirunArgv(in);
  auto at = std::find(argv.begin(), argv.end(), "--bind-to");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at + 1), "none");
  std::vector<std::string> tail(argv.end() - 6, argv.end());
  EXPECT_EQ(tail[0], "/bin/sh");
  EXPECT_THAT(tail[2], HasSubstr("exec $BATON_BIND_EXEC --bind-rank -- \"$@\""));
  EXPECT_EQ(std::vector<std::string>(tail.begin() + 4, tail.end()),
            (std::vector<std::string>{"train", "--fast"}));
}

}  // namespace
}  // namespace baton
