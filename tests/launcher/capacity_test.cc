// `baton capacity` against the source article's numbers: a 40 GiB + 30 GiB instance needs
// a whole 80 GB GPU or a whole H200 (no MIG slice holds it), 70% of peak compute is
// reserved, a 90% guarantee lends at most 30%; its policy YAML is what the coordinator's
// parser accepts; inconsistent inputs are refused with the field named.
#include "launcher/cli/capacity.h"

#include "coordinator/policy_config.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/report.h"
#include "coordinator/sim/trace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::cli {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<CapacityPlan> Plan(const std::string& services, const std::string& plan = "",
                                  CapacityInput* input = nullptr) {
  absl::StatusOr<CapacityInput> in = ParseCapacityInput(services, "s.yaml", plan, "p.yaml");
  if (!in.ok()) return in.status();
  if (input) *input = *in;
  return PlanCapacity(*in);
}

constexpr char kArticle[] = R"(
gpu: H100-80GB
services:
  - {name: chat, weights_gib: 40, peak_kv_cache_gib: 30, peak_qps: 100, qps_per_gpu: 10,
     replicas: 2}
)";

TEST(Capacity, ArticleInstanceTakesAWhole80GbGpuAndReserves70PercentOfPeak) {
  absl::StatusOr<CapacityPlan> p = Plan(kArticle);
  ASSERT_TRUE(p.ok()) << p.status();
  const ServicePlan& s = p->services.at(0);
  EXPECT_DOUBLE_EQ(s.instance_gib, 70);
  EXPECT_EQ(s.unit, "1 x H100-80GB") << "4g.40gb is too small; the 80 GB GPU holds it";
  EXPECT_DOUBLE_EQ(s.peak_compute, 10);
  EXPECT_DOUBLE_EQ(s.reserved_compute, 7);
  EXPECT_EQ(s.instances, 7u);
  EXPECT_EQ(p->inference_gpus, 7u);
  EXPECT_EQ(p->inference_nodes, 1u);
}

TEST(Capacity, ArticleInstanceOnH200TakesTheFullGpuNotA71GbSlice) {
  std::string yaml = kArticle;
  yaml.replace(yaml.find("H100-80GB"), 9, "H200");
  absl::StatusOr<CapacityPlan> p = Plan(yaml);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->services[0].unit, "1 x H200") << "3g.71gb gives 66.1 GiB, under 70";
  // A 12 GiB model fits the smallest slice: 7 to a GPU, a seventh of its compute each.
  absl::StatusOr<CapacityPlan> small = Plan(R"(
gpu: H200
services:
  - {name: embed, weights_gib: 8, peak_kv_cache_gib: 4, peak_qps: 70, qps_per_gpu: 10,
     replicas: 3}
)");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->services[0].unit, "MIG 1g.18gb");
  EXPECT_EQ(small->services[0].instances, 35u) << "4.9 GPUs of compute in sevenths";
  EXPECT_EQ(small->services[0].gpus, 5u);
  // With sharing: none it takes whole GPUs: 70% of 7 GPUs of peak compute.
  absl::StatusOr<CapacityPlan> whole = Plan(R"(
gpu: H200
services:
  - {name: embed, weights_gib: 8, peak_kv_cache_gib: 4, peak_qps: 70, qps_per_gpu: 10,
     replicas: 3, sharing: none}
)");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->services[0].gpus, 5u);
  EXPECT_EQ(whole->services[0].unit, "1 x H200");
}

constexpr char kTraining[] = R"(
guarantee: 0.9
projects:
  - {name: vision, gpu_days: 2000, deadline_days: 7}
  - {name: language, gpu_days: 1000, deadline_days: 10, weight: 2}
)";

TEST(Capacity, NinetyPercentGuaranteeLendsAtMostThirtyPercent) {
  absl::StatusOr<CapacityPlan> p = Plan("", kTraining);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NEAR(p->lend_fraction, 0.3, 1e-9);
  const ProjectPlan& vision = p->projects.at(0);
  EXPECT_NEAR(vision.average_gpus, 285.714, 0.001);
  EXPECT_EQ(vision.nominal, 318u) << "285.7 GPUs available 90% of the time";
  EXPECT_EQ(vision.lending_limit, 95u);
  EXPECT_EQ(p->projects[1].nominal, 112u);
  EXPECT_EQ(p->training_gpus, 432u) << "430 nominal in whole 8-GPU nodes";
  absl::StatusOr<CapacityPlan> strict = Plan("",
                                             "guarantee: 0.99\nprojects: [{name: a, "
                                             "gpu_days: 10, deadline_days: 1}]\n");
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->projects[0].lending_limit, 0u) << "3% of 11";
}

TEST(Capacity, PolicyYamlIsWhatTheCoordinatorParses) {
  CapacityInput in;
  absl::StatusOr<CapacityPlan> p = Plan(kArticle, kTraining, &in);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<Policy> policy = ParsePolicy(PlanPolicyYaml(in, *p));
  ASSERT_TRUE(policy.ok()) << policy.status() << "\n" << PlanPolicyYaml(in, *p);
  const TenantPolicy& vision = policy->Tenant("vision");
  ASSERT_TRUE(vision.nominal.has_value());
  EXPECT_EQ(vision.nominal->gpus, 318u);
  EXPECT_EQ(vision.lending_limit.gpus, 95u) << "the parser's 30% of 318, as planned";
  EXPECT_EQ(policy->Tenant("language").weight, 2);
  EXPECT_EQ(policy->Tenant("serving").nominal->gpus, 7u);
  EXPECT_EQ(policy->Tenant("serving").lending_limit.gpus, 0u);
  ASSERT_EQ(policy->pools.size(), 1u);
  EXPECT_EQ(policy->pools[0].name, "inference");
  EXPECT_THAT(PlanClusterYaml(in, *p), HasSubstr("count: 54"));
}

TEST(Capacity, InconsistentInputsAreRefusedWithTheFieldNamed) {
  auto error = [](const std::string& services, const std::string& plan = "") {
    absl::StatusOr<CapacityPlan> p = Plan(services, plan);
    EXPECT_FALSE(p.ok());
    return std::string(p.status().message());
  };
  EXPECT_THAT(error("services: [{name: a, weights_gib: 40, peak_kv_cache_gib: -1, peak_qps: 1, "
                    "qps_per_gpu: 1}]"),
              HasSubstr("s.yaml:1: services[0].peak_kv_cache_gib: -1.000 must be at least 0"));
  EXPECT_THAT(error("services: [{name: a, weights_gib: 40, peak_kv_cache_gib: 1, peak_qps: 1, "
                    "qps_per_gpu: 0}]"),
              HasSubstr("services[0].qps_per_gpu"));
  EXPECT_THAT(error("services: [{name: a, weights_gib: 40, peak_qps: 1, qps_per_gpu: 1}]"),
              HasSubstr("services[0].peak_kv_cache_gib: missing"));
  EXPECT_THAT(error("gpu: B300\n"), HasSubstr("s.yaml:1: gpu: unknown GPU 'B300'"));
  EXPECT_THAT(error("", "guarantee: 1.5\n"), HasSubstr("p.yaml:1: guarantee"));
  EXPECT_THAT(error("", "projects: [{name: a, gpu_days: 10}]\n"),
              HasSubstr("projects[0].deadline_days: missing"));
  EXPECT_THAT(error("gpu: H100-80GB\nservices: [{name: a, weights_gib: 700, peak_kv_cache_gib: "
                    "100, peak_qps: 1, qps_per_gpu: 1}]\n"),
              HasSubstr("services[0].weights_gib: one instance needs 800.0 GiB, 11 GPUs"));
  EXPECT_THAT(error("", std::string(kTraining) + "budget_gpus: 400\n"),
              HasSubstr("budget_gpus: the plan needs 432 GPUs"));
  EXPECT_THAT(error("services: [{name: a, colour: red}]"), HasSubstr("services[0].colour"));
}

// The plan's own files through baton-sim, judged by CheckPlan: small jobs within quota
// keep every rule; a gang larger than its tenant's nominal quota plus what the others may
// lend it (8 + 30% of 8; the inference pool is all serving's) waits for good, and the
// check says the plan did not hold.
TEST(Capacity, CheckPlanJudgesTheRulesOnASimulation) {
  CapacityInput in;
  absl::StatusOr<CapacityPlan> plan = Plan(R"(
gpu: H100-80GB
services:
  - {name: chat, weights_gib: 40, peak_kv_cache_gib: 30, peak_qps: 20, qps_per_gpu: 10, replicas: 8}
)",
                                           R"(
guarantee: 0.9
projects:
  - {name: team-a, gpu_days: 50, deadline_days: 7}
  - {name: team-b, gpu_days: 50, deadline_days: 7}
)",
                                           &in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->projects[0].nominal, 8u);
  auto nodes = sim::ParseClusterFile(PlanClusterYaml(in, *plan), "cluster");
  absl::StatusOr<Policy> policy = ParsePolicy(PlanPolicyYaml(in, *plan));
  ASSERT_TRUE(nodes.ok() && policy.ok());
  auto run = [&](uint32_t gang_nodes) {
    std::vector<sim::TraceJob> trace;
    for (uint32_t i = 0; i < 40; ++i) {
      sim::TraceJob j;
      j.id = i + 1;
      j.submit_ms = i * 60'000;
      j.tenant = i % 2 ? "team-a" : "team-b";
      j.priority_class = "training";
      j.gpus_per_node = 2;
      j.duration_ms = 1'800'000;
      trace.push_back(j);
    }
    sim::TraceJob gang = trace[0];
    gang.id = 100;
    gang.tenant = "team-a";
    gang.nodes = gang_nodes;
    gang.gpus_per_node = 8;
    trace.push_back(gang);
    for (uint32_t r = 0; r < 2; ++r) {
      sim::TraceJob s = trace[0];
      s.id = 200 + r;
      s.tenant = "serving";
      s.priority_class = "inference";
      s.gpus_per_node = 1;
      s.pool = "inference";
      trace.push_back(s);
    }
    auto s = sim::SimulateTrace(*nodes, *policy, trace, sim::SimOptions{}, 86'400'000);
    return CheckPlan(in, *plan, sim::Summarize(*s, {.big_gang_gpus = 16}));
  };
  std::vector<RuleCheck> fits = run(/*gang_nodes=*/1);
  for (const RuleCheck& c : fits) EXPECT_TRUE(c.held) << c.rule << ": " << c.detail;
  std::vector<RuleCheck> starves = run(/*gang_nodes=*/2);
  ASSERT_EQ(starves.size(), fits.size());
  EXPECT_TRUE(starves[0].held) << "the services still placed at once";
  EXPECT_FALSE(starves[1].held) << starves[1].detail;
  EXPECT_THAT(starves[1].detail, HasSubstr("1 jobs never started"));
  EXPECT_FALSE(starves.back().held) << "the big gang never gathered its GPUs";
  EXPECT_THAT(CheckTable(starves), HasSubstr("DID NOT HOLD project team-a"));
}

// The planner's MPS units are what the scheduler packs: on the cluster the plan lays out
// (its pools, the GPU's memory), as many instances as the plan has pool GPUs times k, each
// asking the share and memory the plan prints, all start at once beside the whole-GPU
// service; one instance more never starts. Users of several owners share a pool here
// through one service user (classes[].mps_user), as the plan assumes.
TEST(Capacity, MpsUnitsAreWhatTheSchedulerPacksOnThePlannedPools) {
  for (const char* gpu : {"H100-80GB", "H200", "A100-80GB"}) {
    SCOPED_TRACE(gpu);
    CapacityInput in;
    absl::StatusOr<CapacityPlan> plan = Plan(std::string("gpu: ") + gpu + R"(
gpus_per_node: 8
services:
  - {name: embed, weights_gib: 14, peak_kv_cache_gib: 9, peak_qps: 90, qps_per_gpu: 10,
     replicas: 3, sharing: mps}
  - {name: tiny, weights_gib: 0.2, peak_kv_cache_gib: 0.1, peak_qps: 100, qps_per_gpu: 100,
     replicas: 1, sharing: mps}
  - {name: chat, weights_gib: 40, peak_kv_cache_gib: 30, peak_qps: 100, qps_per_gpu: 10,
     replicas: 2}
)",
                                             "", &in);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const ServicePlan& embed = plan->services.at(0);
    const ServicePlan& tiny = plan->services.at(1);
    ASSERT_GT(embed.gpu_share_percent, 0u) << embed.unit;
    EXPECT_EQ(tiny.gpu_share_percent, 1u) << "at most 100 to a GPU: a share is 1% or more";
    EXPECT_GE(embed.gpu_memory_mib, uint64_t(23 * 1024)) << "an instance gets what it needs";
    EXPECT_THAT(
        PlanTable(in, *plan),
        HasSubstr("embed: each instance --gpu-share " + std::to_string(embed.gpu_share_percent) +
                  "% --gpu-mem " + std::to_string(embed.gpu_memory_mib) + "Mi"));
    auto nodes = sim::ParseClusterFile(PlanClusterYaml(in, *plan), "cluster");
    absl::StatusOr<Policy> policy = ParsePolicy(PlanPolicyYaml(in, *plan));
    ASSERT_TRUE(nodes.ok() && policy.ok()) << nodes.status() << policy.status();
    for (auto& c : policy->classes) {
      if (c.name == "inference") c.gpu_sharing = "mps", c.mps_user = "svc";
    }
    const uint32_t pools = plan->inference_nodes * plan->mps_gpus_per_node;
    ASSERT_GE(pools, embed.gpus + tiny.gpus);
    // embed's units on every pool (tiny, at 1%, is checked on the plan alone: a hundred
    // services of one core each outgrow a node's CPUs, which the planner does not plan).
    const uint32_t per_gpu = 100 / embed.gpu_share_percent;
    auto run = [&](uint32_t extra) {
      std::vector<sim::TraceJob> trace;
      auto add = [&](const ServicePlan& p, uint32_t n, uint32_t gpus) {
        for (uint32_t i = 0; i < n; ++i) {
          sim::TraceJob j;
          j.id = trace.size() + 1;
          j.tenant = "serving";
          j.user = "owner" + std::to_string(j.id % 5);
          j.priority_class = "inference";
          j.pool = "inference";
          j.gpus_per_node = gpus;
          j.gpu_share_percent = p.gpu_share_percent;
          j.gpu_memory_bytes = p.gpu_memory_mib << 20;
          j.duration_ms = 3'600'000;
          j.cpu_millis_per_node = 100;  // GPUs, not the nodes' CPUs or memory, are counted
          j.memory_bytes_per_node = 64ull << 20;
          trace.push_back(j);
        }
      };
      add(embed, pools * per_gpu + extra, 1);  // tiny's pool too: k of embed's each
      add(plan->services.at(2), plan->services.at(2).instances, 1);
      auto s = sim::SimulateTrace(*nodes, *policy, trace, sim::SimOptions{}, 600'000);
      return sim::Summarize(*s, {});
    };
    nlohmann::json fits = run(0);
    EXPECT_EQ(fits["classes"]["inference"]["never_started"], 0) << fits.dump();
    EXPECT_LE(fits["inference"]["placement_delay_s"]["max"].get<double>(), 1) << fits.dump();
    nlohmann::json over = run(1);
    EXPECT_EQ(over["classes"]["inference"]["never_started"], 1) << "pools hold k, no more";
  }
}

}  // namespace
}  // namespace baton::cli
