// Per-class CPU plans, the GPU environment, and the Isolator's lifecycle (prepare,
// narrow/widen, undo on failure, recover) over the recording driver and scripted tc/nft.
#include "launcher/agent/isolation/isolator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/isolation/gpu_env.h"
#include "tests/launcher/isolation/fakes.h"

namespace baton {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RankOn;

// 8 CPUs as 4 SMT cores: (0,4) (1,5) on NUMA 0, (2,6) (3,7) on NUMA 1; GPU 0 on node 0,
// GPU 1 on node 1, 80 GiB each.
v1::Inventory SmtInventory() {
  v1::Inventory inv;
  inv.set_cpus(8);
  for (int n = 0; n < 2; ++n) {
    v1::NumaNode* node = inv.add_numa_nodes();
    node->set_id(n);
    for (uint32_t c : {2u * n, 2u * n + 1, 2u * n + 4, 2u * n + 5}) node->add_cpus(c);
    for (uint32_t first : {2u * n, 2u * n + 1}) {
      v1::CpuCore* core = inv.add_cores();
      core->set_id(static_cast<uint32_t>(inv.cores_size() - 1));
      core->add_cpus(first);
      core->add_cpus(first + 4);
      core->set_numa_node(n);
    }
    v1::Gpu* g = inv.add_gpus();
    g->set_uuid("GPU-" + std::to_string(n));
    g->set_minor(n);
    g->set_numa_node(n);
    g->set_memory_bytes(80ull << 30);
  }
  return inv;
}

class IsolatorTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(ClassOptions()); }
  void Make(ClassOptions classes, bool net = false) {
    auto driver = std::make_unique<testing::RecordingDriver>();
    driver_ = driver.get();
    std::unique_ptr<NetCaps> caps;
    if (net) {
      runner_ = std::make_shared<testing::ScriptedRunner>();
      runner_->Answer("tc -j qdisc show",
                      {0, R"([{"kind":"htb","handle":"1:","root":true,"refcnt":2}])", ""});
      NetCapsOptions o{.nic = "eth9", .nic_mbps = 1000};
      auto made = NetCaps::Create(o, runner_);
      ASSERT_TRUE(made.ok()) << made.status();
      caps = std::move(*made);
    }
    iso_ = std::make_unique<Isolator>(SmtInventory(), classes, std::move(driver), std::move(caps));
  }
  // `ranks`: the placement's bindings of this node's ranks (one local rank each).
  AttemptRequest Request(uint64_t job, bool inference, uint64_t millis,
                         std::vector<std::string> gpus = {},
                         std::vector<v1::RankBinding> ranks = {}) {
    specs_[job].set_memory_bytes_per_node(1ull << 30);
    return {.job_id = job,
            .attempt = 1,
            .inference = inference,
            .spec = &specs_[job],
            .cpu_millis = millis,
            .memory_bytes = 1ull << 30,
            .gpu_ids = gpus,
            .ranks = ranks,
            .local_ranks = static_cast<uint32_t>(ranks.size())};
  }
  absl::StatusOr<PreparedAttempt> Prepare(uint64_t job, bool inference, uint64_t millis,
                                          std::vector<std::string> gpus = {},
                                          std::vector<v1::RankBinding> ranks = {}) {
    return iso_->Prepare(Request(job, inference, millis, gpus, ranks));
  }
  CgroupLimits Applied(uint64_t job) { return driver_->limits(Isolator::Name(job, 1)); }

  std::map<uint64_t, v1::JobSpec> specs_;
  testing::RecordingDriver* driver_ = nullptr;
  std::shared_ptr<testing::ScriptedRunner> runner_;
  std::unique_ptr<Isolator> iso_;
};

TEST_F(IsolatorTest, InferenceGetsExclusiveWholeCoresNearItsGpu) {
  auto p = Prepare(1, /*inference=*/true, /*millis=*/1500, {"GPU-1"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Applied(1).cpus, "3,7") << "one whole SMT core on NUMA 1";
  EXPECT_EQ(Applied(1).mems, "1");
  EXPECT_EQ(Applied(1).cpu_quota_millis, 2000u) << "quota = its cores";
  EXPECT_EQ(Applied(1).memory_max_bytes, (1ull << 30) * 12 / 10) << "request + 20%";
  EXPECT_TRUE(p->limits.exclusive_cpus());
  EXPECT_EQ(p->limits.kind(), v1::WORKLOAD_KIND_INFERENCE);
  EXPECT_THAT(p->procs_files, Contains("/fake/job-1-a1/cgroup.procs"));
}

TEST_F(IsolatorTest, TrainingIsNarrowedWhenInferenceArrivesAndWidenedWhenItLeaves) {
  ASSERT_TRUE(Prepare(1, /*inference=*/false, /*millis=*/2000).ok());
  EXPECT_EQ(Applied(1).cpus, "0-7");
  EXPECT_EQ(Applied(1).cpu_quota_millis, 8000u) << "bursts into every idle core";
  EXPECT_EQ(Applied(1).cpu_weight, 200u) << "weight in proportion to its cores";
  EXPECT_EQ(Applied(1).memory_max_bytes, 1ull << 30) << "training: exactly its request";

  ASSERT_TRUE(Prepare(2, /*inference=*/true, /*millis=*/1000).ok());
  EXPECT_EQ(Applied(2).cpus, "3,7");
  EXPECT_EQ(Applied(1).cpus, "0-2,4-6") << "narrowed live";
  EXPECT_EQ(Applied(1).cpu_quota_millis, 6000u);
  EXPECT_EQ(iso_->Limits(1, 1).narrowed_cpus(), 2u);
  EXPECT_EQ(iso_->Describe().exclusive_cpus(), "3,7");

  EXPECT_EQ(driver_->exit_cpus(), "0-2,4-6") << "keepers writing exit records: off them too";

  ASSERT_TRUE(iso_->Release(2, 1).ok());
  EXPECT_EQ(Applied(1).cpus, "0-7") << "widened again";
  EXPECT_EQ(driver_->exit_cpus(), "0-7");
  EXPECT_EQ(Applied(1).cpu_quota_millis, 8000u);
  EXPECT_FALSE(driver_->exists("job-2-a1"));
}

TEST_F(IsolatorTest, ReleaseKillsWhatIsLeftAndSkipsTheKillOfAnEmptyCgroup) {
  ASSERT_TRUE(Prepare(1, /*inference=*/false, /*millis=*/1000).ok());
  ASSERT_TRUE(Prepare(2, /*inference=*/false, /*millis=*/1000).ok());
  driver_->SetPids("job-1-a1", {4242});
  ASSERT_TRUE(iso_->Release(1, 1).ok());
  ASSERT_TRUE(iso_->Release(2, 1).ok());
  std::vector<std::string> calls = driver_->calls();
  EXPECT_THAT(calls, Contains("KillAll job-1-a1")) << "a process was left";
  EXPECT_THAT(calls, Not(Contains("KillAll job-2-a1"))) << "nothing left: nothing to kill";
  EXPECT_THAT(calls, Contains("Remove job-1-a1"));
  EXPECT_THAT(calls, Contains("Remove job-2-a1"));
  EXPECT_FALSE(driver_->exists("job-1-a1"));
}

TEST_F(IsolatorTest, TrainingStaysNearItsGpuWhenThatSideHoldsItsRequest) {
  ASSERT_TRUE(Prepare(1, /*inference=*/false, /*millis=*/2000, {"GPU-0"}).ok());
  EXPECT_EQ(Applied(1).cpus, "0-1,4-5");
  EXPECT_EQ(Applied(1).mems, "0");
  ASSERT_TRUE(Prepare(2, /*inference=*/false, /*millis=*/6000, {"GPU-0"}).ok());
  EXPECT_EQ(Applied(2).cpus, "0-7") << "too big for its side: every shared CPU";
}

TEST_F(IsolatorTest, TrainingWithoutBurstIsCappedAtItsRequest) {
  Make(ClassOptions{.training_may_burst = false});
  ASSERT_TRUE(Prepare(1, /*inference=*/false, /*millis=*/500).ok());
  EXPECT_EQ(Applied(1).cpu_quota_millis, 500u);
}

TEST_F(IsolatorTest, InferenceThatWouldLeaveNoSharedCpuIsRefused) {
  ASSERT_TRUE(Prepare(1, /*inference=*/true, /*millis=*/6000).ok());
  auto p = Prepare(2, /*inference=*/true, /*millis=*/1000);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("whole cores"));
  EXPECT_FALSE(driver_->exists("job-2-a1")) << "nothing created for a refused attempt";
}

TEST_F(IsolatorTest, InferenceTakesTheCpusTheSchedulerCharged) {
  auto p = Prepare(1, /*inference=*/true, /*millis=*/4000, {"GPU-0"},
                   {RankOn(0, {0, 4}), RankOn(0, {1, 5})});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Applied(1).cpus, "0-1,4-5") << "the scheduler's whole cores";
  EXPECT_EQ(Applied(1).mems, "0");
  EXPECT_EQ(iso_->Describe().exclusive_cpus(), "0-1,4-5");
  ASSERT_EQ(p->ranks.size(), 2u);
  EXPECT_EQ(p->ranks[0].bind, (ProcessBinding{{0, 4}, {0}}));
  EXPECT_EQ(p->ranks[1].bind, (ProcessBinding{{1, 5}, {0}}));
  EXPECT_EQ(p->limits.ranks(1).cpus(), "1,5");
}

TEST_F(IsolatorTest, ChargedCpusHeldByAnotherInferenceJobFallBackToTheAgentsOwnPick) {
  ASSERT_TRUE(Prepare(1, /*inference=*/true, /*millis=*/1000, {}, {RankOn(0, {0, 4})}).ok());
  EXPECT_EQ(Applied(1).cpus, "0,4");
  auto p = Prepare(2, /*inference=*/true, /*millis=*/1000, {"GPU-1"}, {RankOn(1, {0, 4})});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Applied(2).cpus, "3,7") << "a whole core near its GPU, not job 1's CPUs 0,4";
  EXPECT_EQ(p->ranks[0].cpus, (std::vector<uint32_t>{3, 7})) << "on its NUMA node's share";
  EXPECT_EQ(p->ranks[0].mems, (std::vector<uint32_t>{1}));
  auto unknown = Prepare(3, /*inference=*/true, /*millis=*/1000, {}, {RankOn(0, {42})});
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(Applied(3).cpus, "2,6") << "CPU 42 is not the node's: the agent's own pick";
}

// An older coordinator charged single CPUs of SMT cores: training would run on the
// sibling, on the same core's caches and pipelines. The agent takes whole cores instead.
TEST_F(IsolatorTest, ChargedCpusThatSplitACoreGiveWayToWholeCores) {
  auto p = Prepare(1, /*inference=*/true, /*millis=*/1000, {"GPU-0"}, {RankOn(0, {0})});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Applied(1).cpus, "1,5") << "a whole core of its NUMA node, not CPU 0 alone";
  ASSERT_TRUE(Prepare(2, /*inference=*/false, /*millis=*/1000).ok());
  EXPECT_EQ(Applied(2).cpus, "0,2-4,6-7") << "training on no sibling of inference's core";
  auto two = Prepare(3, /*inference=*/true, /*millis=*/2000, {}, {RankOn(1, {2, 6, 3})});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(Applied(3).cpus, "3,7") << "CPU 3 without its sibling 7: the agent's own pick";
}

TEST_F(IsolatorTest, TrainingRanksFollowTheirNumaNodesThroughNarrowingAndWidening) {
  auto p =
      Prepare(1, /*inference=*/false, /*millis=*/2000, {"GPU-0", "GPU-1"}, {RankOn(0), RankOn(1)});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ranks[0].cpus, (std::vector<uint32_t>{0, 1, 4, 5}));
  EXPECT_EQ(p->ranks[1].bind, (ProcessBinding{{2, 3, 6, 7}, {1}}));
  ASSERT_TRUE(Prepare(2, /*inference=*/true, /*millis=*/1000, {"GPU-1"}).ok());
  v1::IsolationLimits narrowed = iso_->Limits(1, 1);
  ASSERT_EQ(narrowed.ranks_size(), 2);
  EXPECT_EQ(narrowed.ranks(0).cpus(), "0-1,4-5");
  EXPECT_EQ(narrowed.ranks(1).cpus(), "2,6") << "node 1 less the inference core (3,7)";
  EXPECT_EQ(narrowed.ranks(1).mems(), "1");
  ASSERT_TRUE(iso_->Release(2, 1).ok());
  EXPECT_EQ(iso_->Limits(1, 1).ranks(1).cpus(), "2-3,6-7") << "widened back";
}

TEST_F(IsolatorTest, AnAttemptMayNotOpenTheNodesOtherGpusAndGetsItsPidsLimit) {
  specs_[7].set_memory_bytes_per_node(1ull << 30);
  AttemptRequest r{.job_id = 7,
                   .attempt = 1,
                   .spec = &specs_[7],
                   .cpu_millis = 1000,
                   .memory_bytes = 1ull << 30,
                   .gpu_ids = {"GPU-1"},
                   .pids_limit = 512};
  auto p = iso_->Prepare(r);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(driver_->denied("job-7-a1"), (std::vector<CharDevice>{{kNvidiaMajor, 0}}))
      << "GPU 0's node, not its own GPU 1's";
  EXPECT_EQ(driver_->pids_max("job-7-a1"), 512u);
  EXPECT_EQ(p->limits.pids_limit(), 512u);
  EXPECT_EQ(p->limits.fenced_gpus(), 1u);
  auto calls = driver_->calls();
  auto fenced = std::find(calls.begin(), calls.end(), "DenyDevices job-7-a1");
  auto created = std::find(calls.begin(), calls.end(), "Create job-7-a1");
  ASSERT_NE(fenced, calls.end());
  EXPECT_LT(created, fenced) << "fenced once it exists, before anything joins it";
  ASSERT_TRUE(Prepare(8, /*inference=*/false, /*millis=*/500).ok());
  EXPECT_EQ(driver_->denied("job-8-a1"),
            (std::vector<CharDevice>{{kNvidiaMajor, 0}, {kNvidiaMajor, 1}}))
      << "a CPU-only job opens no GPU at all";
}

TEST_F(IsolatorTest, AFenceThatCannotBeSetRefusesTheAttempt) {
  driver_->Fail("DenyDevices", "job-9-a1", absl::FailedPreconditionError("no devices cgroup"));
  auto p = Prepare(9, /*inference=*/false, /*millis=*/500, {"GPU-0"});
  EXPECT_FALSE(p.ok());
  EXPECT_FALSE(driver_->exists("job-9-a1")) << "undone";
}

TEST_F(IsolatorTest, PrepareUndoesEverythingOnAPartialFailure) {
  ASSERT_TRUE(Prepare(1, /*inference=*/false, /*millis=*/1000).ok());
  driver_->Fail("Apply", "job-1-a1", absl::InternalError("cpuset busy"));  // narrowing fails
  auto p = Prepare(2, /*inference=*/true, /*millis=*/1000);
  ASSERT_FALSE(p.ok());
  auto calls = driver_->calls();
  EXPECT_THAT(calls, Contains("Remove job-2-a1"));
  EXPECT_FALSE(driver_->exists("job-2-a1"));
  EXPECT_EQ(iso_->Describe().exclusive_cpus(), "") << "its cores are free again";
  // The undo came after the create (reverse order).
  auto created = std::find(calls.begin(), calls.end(), "Create job-2-a1");
  auto removed = std::find(calls.begin(), calls.end(), "Remove job-2-a1");
  EXPECT_LT(created, removed);
}

TEST_F(IsolatorTest, CappedTrainingGetsAClassAndNcclOnSockets) {
  Make(ClassOptions(), /*net=*/true);
  auto p = Prepare(1, /*inference=*/false, /*millis=*/1000);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->limits.net_class(), "1:100");
  EXPECT_EQ(p->limits.net_ceil_mbps(), 700u) << "70% of the NIC by default";
  EXPECT_EQ(p->env.at("NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(p->env.at("NCCL_SOCKET_IFNAME"), "eth9");
  EXPECT_THAT(runner_->calls(),
              Contains(HasSubstr("socket cgroupv2 level 2 \"unified/fake/job-1-a1\" meta mark "
                                 "set meta mark | 0x00800000 meta priority set 1:100")))
      << "marked for the caps' IFB";
  EXPECT_THAT(runner_->calls(),
              Contains(HasSubstr("tc class add dev ifb-eth9 parent 1:1 classid 1:100")))
      << "its class on the IFB, not on the NIC";
  auto inference = Prepare(2, /*inference=*/true, /*millis=*/1000);
  ASSERT_TRUE(inference.ok());
  EXPECT_EQ(inference->limits.net_class(), "1:10") << "inference rides the priority class";
  EXPECT_THAT(runner_->calls(),
              Contains(HasSubstr("socket cgroupv2 level 2 \"unified/fake/job-2-a1\" meta "
                                 "priority set 1:10")));
  EXPECT_FALSE(inference->env.count("NCCL_IB_DISABLE"));
}

// The policy's network.steer_capped_training_to_sockets off: the attempt is still capped
// (its class and rule), but NCCL's transport is the job's.
TEST_F(IsolatorTest, CappedTrainingKeepsItsNcclTransportWhenThePolicySaysSo) {
  Make(ClassOptions(), /*net=*/true);
  AttemptRequest r = Request(1, /*inference=*/false, /*millis=*/1000);
  r.keep_nccl_transport = true;
  auto p = iso_->Prepare(r);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->limits.net_class(), "1:100") << "still under the training class's ceiling";
  EXPECT_EQ(p->limits.net_ceil_mbps(), 700u);
  EXPECT_FALSE(p->env.count("NCCL_IB_DISABLE"));
  EXPECT_FALSE(p->env.count("NCCL_SOCKET_IFNAME"));
}

TEST_F(IsolatorTest, AFailedNetworkRuleUndoesTheClassAndTheCgroup) {
  Make(ClassOptions(), /*net=*/true);
  runner_->Answer("nft add rule", {1, "", "Error: cgroupv2 path fails: No such file"});
  auto p = Prepare(1, /*inference=*/false, /*millis=*/1000);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(driver_->exists("job-1-a1"));
  EXPECT_THAT(runner_->calls(),
              Contains(HasSubstr("tc class add dev ifb-eth9 parent 1:1 classid 1:100")));
}

TEST_F(IsolatorTest, RecoverRemovesDeadAttemptsAndReturnsLiveOnes) {
  driver_->SetPids("job-1-a1", {});
  driver_->SetPids("job-2-a4", {4242, 4243});
  auto live = iso_->Recover();
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_EQ(live->size(), 1u);
  EXPECT_EQ((*live)[0].job_id, 2u);
  EXPECT_EQ((*live)[0].attempt, 4u);
  EXPECT_EQ((*live)[0].pids.size(), 2u);
  EXPECT_FALSE(driver_->exists("job-1-a1"));
  EXPECT_TRUE(driver_->exists("job-2-a4"));
}

TEST_F(IsolatorTest, RecoverDropsNetworkRulesAndClassesOfDeadAttempts) {
  Make(ClassOptions(), /*net=*/true);
  driver_->SetPids("job-2-a1", {4242});
  runner_->Answer("nft -j list chain",
                  {0, testing::NftListing({{"job-1-a1 1:100", 4}, {"job-2-a1 1:101", 5}}), ""});
  runner_->Answer("tc -s class show",
                  {0,
                   "class htb 1:1 root rate 1Gbit ceil 1Gbit\n Sent 0 bytes 0 pkt (dropped 0, "
                   "overlimits 0 requeues 0)\n class htb 1:20 parent 1:1 rate 300Mbit ceil "
                   "1Gbit\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\nclass htb "
                   "1:30 parent 1:1 rate 100Mbit ceil 1Gbit\n Sent 0 bytes 0 pkt (dropped 0, "
                   "overlimits 0 requeues 0)\nclass htb "
                   "1:100 parent 1:1 rate 70Mbit ceil 700Mbit\n Sent 0 bytes 0 pkt (dropped 0, "
                   "overlimits 0 requeues 0)\nclass htb 1:101 parent 1:1 rate 70Mbit ceil "
                   "700Mbit\n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n",
                   ""});
  ASSERT_TRUE(iso_->Recover().ok());
  auto calls = runner_->calls();
  EXPECT_THAT(calls, Contains("nft delete rule inet baton out handle 4"));
  EXPECT_THAT(calls, Contains("tc class del dev ifb-eth9 classid 1:100"));
  EXPECT_THAT(calls, Not(Contains("tc class del dev ifb-eth9 classid 1:101")));
  EXPECT_THAT(calls, Not(Contains("nft delete rule inet baton out handle 5")));
  // The same listing read as the NIC's: capped classes there are an older agent's layout.
  EXPECT_THAT(calls, Contains("tc class del dev eth9 classid 1:101"));
  EXPECT_THAT(calls, Not(Contains("tc class del dev eth9 classid 1:20")));
  EXPECT_THAT(calls, Not(Contains("tc class del dev eth9 classid 1:30")))
      << "the NIC's class of capped traffic back from the IFB stays";
}

TEST_F(IsolatorTest, WithoutADriverOnlyTheEnvironmentApplies) {
  Isolator none(SmtInventory(), ClassOptions(), nullptr, nullptr);
  v1::JobSpec spec;
  AttemptRequest r{
      .job_id = 1, .attempt = 1, .inference = true, .spec = &spec, .gpu_ids = {"GPU-0"}};
  auto p = none.Prepare(r);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->procs_files.empty());
  EXPECT_EQ(p->env.at("TF_FORCE_GPU_ALLOW_GROWTH"), "true");
  EXPECT_EQ(none.Describe().mode(), "none");
  r.ranks = {RankOn(1)};
  r.local_ranks = 1;
  r.job_id = 2;
  auto bound = none.Prepare(r);
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->ranks[0].bind, (ProcessBinding{{2, 3, 6, 7}, {1}})) << "within the node";
  EXPECT_TRUE(none.Release(1, 1).ok());
  EXPECT_TRUE(none.Recover()->empty());
}

v1::Gpu Whole(uint64_t gib) {
  v1::Gpu g;
  g.set_uuid("GPU-a");
  g.set_memory_bytes(gib << 30);
  return g;
}

TEST(GpuEnv, InferenceGrowsGpuMemoryOnDemandKeepingItsOwnAllocatorOptions) {
  v1::JobSpec spec;
  (*spec.mutable_env())["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:128";
  GpuEnv env = BuildGpuEnv({.inference = true, .spec = &spec, .gpus = {Whole(80)}});
  EXPECT_EQ(env.env["PYTORCH_CUDA_ALLOC_CONF"], "max_split_size_mb:128,expandable_segments:True");
  EXPECT_EQ(env.env["TF_FORCE_GPU_ALLOW_GROWTH"], "true");
  EXPECT_EQ(env.env["XLA_PYTHON_CLIENT_PREALLOCATE"], "false");
  GpuEnv training = BuildGpuEnv({.inference = false, .spec = &spec, .gpus = {Whole(80)}});
  EXPECT_FALSE(training.env.count("TF_FORCE_GPU_ALLOW_GROWTH"));
}

TEST(GpuEnv, GpuMemoryWithoutAShareSetsNoMpsVariablesOnAnyJob) {
  // No MPS daemon runs for a whole GPU: CUDA would ignore the variables, and `baton status`
  // would say "mps" of a limit nothing enforces (issue 47).
  v1::JobSpec spec;
  spec.set_gpu_memory_bytes(20ull << 30);
  for (bool inference : {false, true}) {
    GpuEnv env = BuildGpuEnv({.inference = inference, .spec = &spec, .gpus = {Whole(80)}});
    EXPECT_EQ(env.sharing, "") << inference;
    for (const auto& [key, value] : env.env) {
      EXPECT_EQ(key.rfind("CUDA_MPS_", 0), std::string::npos) << key << "=" << value;
    }
  }
}

TEST(GpuEnv, AShareIsReportedAsMpsItsVariablesLeftToItsPoolsDaemon) {
  v1::JobSpec spec;
  spec.set_gpu_share_percent(25);
  spec.set_gpu_memory_bytes(20ull << 30);
  GpuEnv env = BuildGpuEnv({.inference = true, .spec = &spec, .gpus = {Whole(80)}});
  EXPECT_EQ(env.sharing, "mps");
  for (const auto& [key, value] : env.env) {
    EXPECT_EQ(key.rfind("CUDA_MPS_", 0), std::string::npos) << "MpsPools sets " << key;
  }
}

TEST(GpuEnv, MigSlicesNeedNoMpsAndCappedJobsKeepNcclOnSockets) {
  v1::JobSpec spec;
  spec.set_gpu_memory_bytes(10ull << 30);
  v1::Gpu slice = Whole(18);
  slice.set_mig_profile("1g.18gb");
  GpuEnv env = BuildGpuEnv({.spec = &spec, .gpus = {slice}, .capped_nic = "eth1"});
  EXPECT_EQ(env.sharing, "mig");
  EXPECT_FALSE(env.env.count("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
  EXPECT_EQ(env.env["NCCL_IB_DISABLE"], "1");
  EXPECT_EQ(env.env["NCCL_SOCKET_IFNAME"], "eth1");
}

TEST(CpuList, FormatsRanges) {
  EXPECT_EQ(FormatCpuList({5, 0, 1, 2, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({3}), "3");
}

TEST(SelfAffinity, TheSystemCpusLessWhatInferenceHoldsNeverAnInferenceCore) {
  std::vector<uint32_t> node = {0, 1, 2, 3, 4, 5, 6, 7};
  SelfAffinity every(node, {});
  EXPECT_EQ(every.Allowed({}), node);
  EXPECT_EQ(every.Allowed({6, 7}), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  SelfAffinity reserved(node, {1, 0});  // --system-cpus 0,1: kubelet's reserved CPUs
  EXPECT_EQ(reserved.Allowed({}), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(reserved.Allowed({1, 5}), (std::vector<uint32_t>{0}));
  // Inference holds every system CPU: the agent goes to the rest, never onto its cores.
  EXPECT_EQ(reserved.Allowed({0, 1}), (std::vector<uint32_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(SelfAffinity::Check(node, {0, 7}).ok());
  absl::Status bad = SelfAffinity::Check(node, {2, 8, 9});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("--system-cpus names CPUs this node does not have: 8-9"),
            std::string::npos)
      << bad;
}

}  // namespace
}  // namespace baton
