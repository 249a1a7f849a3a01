// baton-sim against answers known without it: one tenant alone fills the cluster; weights
// 1:3 converge to 25%/75% within two half-lives; a 30% lending limit caps what is lent; a
// 64-GPU gang behind a stream of 1-GPU jobs starts once the longest running job is done
// (plus one pass). And every input it reads is checked with the file, line and field.
#include <algorithm>

#include "coordinator/policy_config.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/generate.h"
#include "coordinator/sim/report.h"
#include "coordinator/sim/trace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::sim {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr Time kMinute = 60'000;
constexpr Time kHour = 60 * kMinute;

std::vector<sched::NodeInfo> Nodes(uint32_t n, const std::string& prefix = "n") {
  std::vector<sched::NodeInfo> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(MakeNode(prefix + std::to_string(i), {}));
  return out;
}

TraceJob Job(JobId id, Time submit, const std::string& tenant, uint32_t gpus, Time duration,
             const std::string& cls = "training", uint32_t nodes = 1) {
  TraceJob j;
  j.id = id;
  j.submit_ms = submit;
  j.tenant = tenant;
  j.priority_class = cls;
  j.nodes = nodes;
  j.gpus_per_node = gpus;
  j.duration_ms = duration;
  j.checkpoint_interval_ms = 10 * kMinute;
  return j;
}

Policy ParsedPolicy(const std::string& yaml) {
  absl::StatusOr<Policy> p = ParsePolicy(yaml);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Policy::Default();
}

// Deterministic durations from 5 to 15 minutes, so that exits are spread out.
Time Spread(JobId id) { return 5 * kMinute + static_cast<Time>(id * 7919 % 600) * 1000; }

TEST(SimKnownAnswers, OneTenantAloneGetsTheWholeCluster) {
  // 400 jobs of 5-15 minutes on 32 GPUs: the first ~2 hours are full, but for the moment
  // between a job's exit and the pass that replaces it (at most one tick).
  Policy policy = Policy::Default();
  Simulator sim(Nodes(4), policy, SimOptions{});
  PoolTolerations none;
  for (JobId id = 1; id <= 400; ++id) {
    TraceJob j = Job(id, 0, "solo", 1, Spread(id));
    sim.Submit(ToPending(j, policy, none), WorkOf(j));
  }
  sim.RunUntil(kMinute);
  sim.ResetGpuMs();
  sim.RunUntil(91 * kMinute);
  EXPECT_GT(sim.gpu_ms().at("solo"), 0.999 * 32 * 90 * kMinute);
  sim.RunToCompletion(24 * kHour);
  nlohmann::json summary = Summarize(sim);
  EXPECT_EQ(summary["all"]["finished"], 400);
  EXPECT_DOUBLE_EQ(summary["tenants"]["solo"]["gpu_share"].get<double>(), 1.0);
  EXPECT_EQ(summary["all"]["wait_s"]["p50"].get<double>() > 0, true) << "most of them queued";
}

TEST(SimKnownAnswers, WeightsOneToThreeConvergeWithinTwoHalfLives) {
  Policy policy = ParsedPolicy(R"(
fair_share: {half_life: 1h}
tenants:
  - {name: small, weight: 1}
  - {name: large, weight: 3}
)");
  std::vector<TraceJob> trace;
  for (JobId id = 1; id <= 2400; ++id) {
    trace.push_back(Job(id, 0, id % 2 ? "small" : "large", 1, Spread(id)));
  }
  Simulator sim(Nodes(10), policy, SimOptions{});
  PoolTolerations none;
  for (const TraceJob& j : trace) sim.Submit(ToPending(j, policy, none), WorkOf(j));
  sim.RunUntil(kHour);
  sim.ResetGpuMs();
  sim.RunUntil(2 * kHour);
  double small = sim.gpu_ms().at("small"), large = sim.gpu_ms().at("large");
  EXPECT_NEAR(small / (small + large), 0.25, 0.05);
  EXPECT_NEAR(large / (small + large), 0.75, 0.05);
  EXPECT_GT(small + large, 0.95 * 80 * kHour) << "the cluster stays full";
}

// Most GPUs `tenant` held at any sample.
uint32_t Peak(const Simulator& sim, const std::string& tenant) {
  uint32_t most = 0;
  for (const SimSample& s : sim.samples()) {
    auto it = s.tenant_gpus.find(tenant);
    if (it != s.tenant_gpus.end()) most = std::max(most, static_cast<uint32_t>(it->second));
  }
  return most;
}

TEST(SimKnownAnswers, LendingLimitCapsWhatIsLent) {
  auto run = [](const std::string& limit) {
    Policy policy = ParsedPolicy(R"(
tenants:
  - {name: lender, nominal: {gpus: 80}, lending_limit: )" +
                                 limit + R"(}
  - {name: borrower, nominal: {gpus: 0}}
)");
    std::vector<TraceJob> trace;
    for (JobId id = 1; id <= 100; ++id) trace.push_back(Job(id, 0, "borrower", 1, 2 * kHour));
    SimOptions options;
    options.sample_interval_ms = 5 * kMinute;
    return SimulateTrace(Nodes(10), policy, trace, options, 24 * kHour);
  };
  // The lender is idle: all 80 GPUs are its nominal quota, 30% of it may be lent.
  std::unique_ptr<Simulator> capped = run("30%");
  EXPECT_EQ(Peak(*capped, "borrower"), 24u);
  EXPECT_EQ(Summarize(*capped)["all"]["finished"], 100) << "the rest ran as others finished";
  EXPECT_EQ(Peak(*run("50%"), "borrower"), 40u);
}

TEST(SimKnownAnswers, BigGangBehindOneGpuStreamStartsWhenTheLongestRunningJobEnds) {
  // 64 GPUs; a 1-GPU job every minute, 50-70 minutes each (the cluster stays nearly
  // full); at 3 h a 64-GPU gang of another tenant. The head of the line holds the nodes
  // that free up, so it starts when the last running job ends, and no later than one
  // pass after that.
  std::vector<TraceJob> trace;
  JobId id = 1;
  for (Time t = 0; t < 6 * kHour; t += kMinute, ++id) {
    trace.push_back(
        Job(id, t, "stream", 1, 50 * kMinute + static_cast<Time>(id * 37 % 1200) * 1000));
  }
  JobId gang = id;
  Time at = 3 * kHour;
  trace.push_back(Job(gang, at, "big", 8, 30 * kMinute, "training", /*nodes=*/8));
  Policy policy = Policy::Default();
  SimOptions options;
  Simulator sim(Nodes(8), policy, options);
  PoolTolerations none;
  std::map<JobId, Time> duration;
  for (const TraceJob& j : trace) {
    sim.Submit(ToPending(j, policy, none), WorkOf(j));
    duration[j.id] = j.duration_ms;
  }
  sim.RunUntil(at);
  Time longest = 0;
  for (const sched::RunningGang& g : sim.view().running) {
    longest = std::max(longest, sim.jobs().at(g.id).first_start + duration[g.id] - at);
  }
  ASSERT_GT(sim.view().running.size(), 40u) << "the stream keeps the cluster busy";
  sim.RunUntil(12 * kHour);
  const SimJob& big = sim.jobs().at(gang);
  ASSERT_GE(big.first_start, 0) << "the gang never started";
  EXPECT_LE(big.first_start, at + longest + options.min_pass_interval_ms);
  EXPECT_GE(big.first_start, at + longest) << "it needs every GPU";
  EXPECT_TRUE(big.finished);
}

TEST(SimInput, TraceErrorsNameFileLineAndColumn) {
  auto error = [](const std::string& text) {
    absl::StatusOr<std::vector<TraceJob>> t = ParseTrace(text, "t.csv");
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : std::string(t.status().message());
  };
  const std::string header =
      "submit,tenant,class,nodes,gpus_per_node,duration,checkpoint_interval\n";
  EXPECT_THAT(error("submit,tenant,class,nodes,gpus,duration,checkpoint_interval\n"),
              AllOf(HasSubstr("t.csv:1"), HasSubstr("unknown column 'gpus'")));
  EXPECT_THAT(error("submit,tenant,class\n"), HasSubstr("lacks the required column 'nodes'"));
  EXPECT_THAT(error(header + "0,a,training,1,8,3600,600\n5,a,training,1,8,-3,600\n"),
              AllOf(HasSubstr("t.csv:3: duration: '-3'")));
  EXPECT_THAT(error(header + "0,a,training,1,8,3600\n"), HasSubstr("t.csv:2: 6 fields"));
  EXPECT_THAT(error(header + "0,a,training,zero,8,3600,600\n"), HasSubstr("t.csv:2: nodes"));
  EXPECT_THAT(error(header + "0,a,training,1,8,0,600\n"), HasSubstr("duration: must be above 0"));
  EXPECT_THAT(error("{\"submit\": 0, \"tenant\": \"a\", \"colour\": 1}\n"),
              AllOf(HasSubstr("t.csv:1: colour: unknown key"), HasSubstr("duration: missing")));
  absl::StatusOr<std::vector<TraceJob>> ok = ParseTrace(
      "{\"submit\": 1.5, \"tenant\": \"a\", \"class\": \"training\", \"nodes\": 2, "
      "\"gpus_per_node\": 8, \"duration\": \"2h\", \"checkpoint_interval\": 600}\n",
      "t.jsonl");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].submit_ms, 1500);
  EXPECT_EQ((*ok)[0].duration_ms, 2 * kHour);
}

TEST(SimInput, JobsTheClusterOrPolicyCannotHoldAreRefusedByLine) {
  std::vector<TraceJob> jobs = {Job(1, 0, "a", 8, kHour), Job(2, 0, "a", 8, kHour, "training", 5),
                                Job(3, 0, "a", 1, kHour, "urgent"), Job(4, 0, "a", 16, kHour)};
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].line = static_cast<int>(i + 2);
  absl::Status s = CheckTrace(jobs, "t.csv", Nodes(4), Policy::Default());
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("t.csv:3: nodes: 5 nodes with 8 GPUs each, but pool default of the "
                              "cluster has only 4"),
                    HasSubstr("t.csv:4: class: 'urgent' is not a class"),
                    HasSubstr("t.csv:5: nodes: 1 nodes with 16 GPUs")));
  EXPECT_THAT(std::string(s.message()), ::testing::Not(HasSubstr("t.csv:2")));
}

TEST(SimInput, ClusterFileErrorsNameLineAndKey) {
  auto error = [](const std::string& yaml) {
    auto n = ParseClusterFile(yaml, "c.yaml");
    EXPECT_FALSE(n.ok());
    return n.ok() ? std::string() : std::string(n.status().message());
  };
  EXPECT_THAT(error("node_groups:\n  - name: a\n    gpus: 8\n"),
              HasSubstr("c.yaml:2: node_groups[0].count: a group needs a count"));
  EXPECT_THAT(error("node_groups:\n  - name: a\n    count: 2\n    gpus: many\n"),
              HasSubstr("c.yaml:4: node_groups[0].gpus: 'many' is not valid"));
  EXPECT_THAT(error("node_groups:\n  - {name: a, count: 2, colour: red}\n"),
              HasSubstr("unknown key 'colour'"));
  EXPECT_THAT(error("nodes: 3\n"), HasSubstr("node_groups"));
  auto nodes = ParseClusterFile(
      "node_groups:\n"
      "  - {name: t, count: 3, gpus: 4, numa: 2, cpus: 64, memory: 512Gi}\n"
      "  - {name: i, count: 1, gpus: 2, pool: inference, taints: [{key: d, effect: NoSchedule}],"
      " mig: {profile: 3g.71gb, slices: 2}}\n",
      "c.yaml");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[2].name, "t-0002");
  EXPECT_EQ((*nodes)[0].gpus.size(), 4u);
  EXPECT_EQ((*nodes)[0].gpus[3].numa, 1);
  EXPECT_EQ((*nodes)[3].pool, "inference");
  EXPECT_EQ((*nodes)[3].gpus.size(), 6u) << "2 GPUs, each with 2 slices";
  EXPECT_EQ((*nodes)[3].gpus[1].parent_uuid, (*nodes)[3].gpus[0].uuid);
}

TEST(SimInput, ASwitchTreeLabelsTheNodesInFileOrder) {
  auto c = ParseCluster(
      "node_groups:\n  - {name: a, count: 5}\n"
      "switch_tree: {nodes_per_leaf: 2, leaves_per_spine: 2, slowdown: 0.25}\n",
      "c.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tree.nodes_per_leaf, 2u);
  EXPECT_DOUBLE_EQ(c->tree.slowdown, 0.25);
  std::vector<std::string> leaves, spines;
  for (const auto& n : c->nodes) {
    leaves.push_back(n.labels.at(kLeafLabel));
    spines.push_back(n.labels.at(kSpineLabel));
  }
  EXPECT_EQ(leaves, (std::vector<std::string>{"leaf-1", "leaf-1", "leaf-2", "leaf-2", "leaf-3"}));
  EXPECT_EQ(spines,
            (std::vector<std::string>{"spine-1", "spine-1", "spine-1", "spine-1", "spine-2"}));
  for (const char* bad :
       {"switch_tree: {leaves_per_spine: 2}\n", "switch_tree: {nodes_per_leaf: 0}\n",
        "switch_tree: {nodes_per_leaf: 2, slowdown: -1}\n",
        "switch_tree: {nodes_per_leaf: 2, racks: 3}\n"}) {
    auto e = ParseCluster(std::string("node_groups:\n  - {name: a, count: 2}\n") + bad, "c.yaml");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("c.yaml:3: switch_tree")) << bad;
  }
}

// The network's price: two 1-hour 2-node gangs on a cluster of two leaves of two nodes,
// one node of each leaf busy for the first 10 minutes. Without a topology request the
// first gang starts at once over both leaves and runs 1.5 times as long (s = 0.5); with
// a required leaf it waits 10 minutes and runs its hour.
TEST(SimKnownAnswers, AGangSpreadOverLeavesRunsSlowerAndALeafBoundOneWaitsInstead) {
  for (bool topology : {false, true}) {
    auto c = ParseCluster(
        "node_groups:\n  - {name: n, count: 4}\nswitch_tree: {nodes_per_leaf: 2, slowdown: 0.5}\n",
        "c.yaml");
    ASSERT_TRUE(c.ok()) << c.status();
    for (size_t i = 0; i < c->nodes.size(); ++i)
      c->nodes[i].labels["node"] = "n" + std::to_string(i);
    Policy policy = Policy::Default();
    policy.topology_levels = {{"leaf", kLeafLabel}};
    SimOptions options;
    options.nodes_per_leaf = c->tree.nodes_per_leaf;
    options.topology_slowdown = c->tree.slowdown;
    Simulator sim(c->nodes, policy, options);
    PoolTolerations none;
    for (JobId id : {1, 2}) {  // n-0000 and n-0002: one node of each leaf
      TraceJob busy = Job(id, 0, "x", 8, 10 * kMinute);
      sched::PendingJob p = ToPending(busy, policy, none);
      p.request.selector = {{"node", "n" + std::to_string(id == 1 ? 0 : 2)}};
      sim.Submit(p, WorkOf(busy));
    }
    TraceJob gang = Job(3, kMinute, "t", 8, kHour, "training", 2);
    sched::PendingJob g = ToPending(gang, policy, none);
    if (topology) g.request.topology = {"leaf", true, 0};
    sim.Submit(g, WorkOf(gang));
    sim.RunToCompletion(10 * kHour);
    const SimJob& j = sim.jobs().at(3);
    ASSERT_TRUE(j.finished) << topology;
    if (!topology) {
      EXPECT_EQ(j.first_start, kMinute);
      EXPECT_EQ(j.spread_attempts, 1u);
      EXPECT_NEAR(static_cast<double>(j.finished_at - j.first_start), 1.5 * kHour, 1000);
    } else {
      EXPECT_GE(j.first_start, 10 * kMinute);
      EXPECT_EQ(j.spread_attempts, 0u);
      EXPECT_NEAR(static_cast<double>(j.finished_at - j.first_start), kHour, 1000);
    }
    nlohmann::json gangs = Summarize(sim)["gangs"];
    EXPECT_EQ(gangs["jobs"], 1);
    EXPECT_EQ(gangs["spread"], topology ? 0 : 1);
    EXPECT_EQ(gangs["by_nodes"]["2"]["jobs"], 1);
  }
}

TEST(SimTraces, SyntheticTraceHasThePublishedShape) {
  SyntheticOptions o;
  o.jobs = 5000;
  o.days = 2;
  o.seed = 3;
  std::vector<TraceJob> t = GenerateTrace(o);
  std::vector<double> durations;
  uint32_t single = 0, gangs = 0, day = 0, night = 0;
  for (const TraceJob& j : t) {
    if (j.priority_class == "inference") continue;
    durations.push_back(static_cast<double>(j.duration_ms));
    single += j.nodes * j.gpus_per_node == 1;
    gangs += j.nodes > 1;
    Time hour = j.submit_ms / kHour % 24;
    day += hour >= 10 && hour < 18;
    night += hour < 6 || hour >= 22;
  }
  EXPECT_GT(single, 0.6 * o.jobs);
  EXPECT_GT(gangs, 0u);
  EXPECT_LT(gangs, 0.1 * o.jobs);
  EXPECT_GT(Quantile(durations, 0.99) / Quantile(durations, 0.5), 20) << "heavy tail";
  EXPECT_GT(day, 1.5 * night) << "submissions follow the day (8 hours each)";
  EXPECT_EQ(t.size(), GenerateTrace(o).size());
  EXPECT_EQ(t[100].duration_ms, GenerateTrace(o)[100].duration_ms) << "same seed, same trace";
}

TEST(SimTraces, HeliosLogConvertsColumnByColumn) {
  const std::string log =
      "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
      "duration,queue\n"
      "1,u1,vcA,j,16,64,2,COMPLETED,2020-04-01 00:00:10,2020-04-01 00:01:00,x,3600,50\n"
      "2,u2,vcB,j,0,4,1,COMPLETED,2020-04-01 00:00:20,x,x,100,0\n"
      "3,u2,vcB,j,1,4,1,FAILED,2020-04-01 00:00:05,x,x,60,0\n";
  auto jobs = ConvertJobLog(log, "log.csv", ConvertOptions{});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u) << "the CPU job is left out";
  EXPECT_EQ((*jobs)[0].tenant, "vcB");
  EXPECT_EQ((*jobs)[0].submit_ms, 0);
  EXPECT_EQ((*jobs)[1].submit_ms, 5000);
  EXPECT_EQ((*jobs)[1].nodes, 2u);
  EXPECT_EQ((*jobs)[1].gpus_per_node, 8u);
  EXPECT_EQ((*jobs)[1].duration_ms, 3600 * 1000);
  auto bad = ConvertJobLog("job_id,vc,gpu_num,submit_time,duration\n1,a,2,yesterday,5\n", "log.csv",
                           ConvertOptions{});
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("log.csv:2: submit_time"));
}

// The checked-in examples (docs/simulator.md, docs/capacity.md) stay valid and quick.
TEST(SimExamples, ExampleClusterAndTraceRunUnderTheExamplePolicy) {
  const std::string dir = std::string(BATON_SOURCE_DIR) + "/";
  auto nodes = LoadClusterFile(dir + "docs/examples/cluster.yaml");
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  auto trace = LoadTrace(dir + "docs/examples/trace.csv");
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<Policy> policy = LoadPolicyFile(dir + "scripts/policy.example.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  ASSERT_TRUE(CheckTrace(*trace, "trace.csv", *nodes, *policy).ok());
  std::unique_ptr<Simulator> sim =
      SimulateTrace(*nodes, *policy, *trace, SimOptions{}, 30 * 24 * kHour);
  nlohmann::json s = Summarize(*sim);
  EXPECT_EQ(s["all"]["finished"].get<uint32_t>(), trace->size());
  EXPECT_LE(s["inference"]["placement_delay_s"]["max"].get<double>(), 0.25)
      << "services wait at most one tick: the inference pool holds them";
}

}  // namespace
}  // namespace baton::sim
