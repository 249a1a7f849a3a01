// The coordinator's Prometheus metrics, fed by a real JobManager (real store, simulated
// time): the values a scenario produces, the names and label sets held to the list in
// tests/util/metric_names.h, and the monitoring files held to the same list.
#include "coordinator/metrics.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "nlohmann/json.hpp"
#include "tests/coordinator/harness.h"
#include "tests/util/metric_names.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;

class MetricsScenario : public ::testing::Test {
 protected:
  MetricsScenario() : metrics_(&clock_, Policy::Default()), h_(Options(), "", &metrics_) {}

  static JobManagerOptions Options() {
    JobManagerOptions o = TestOptions();
    o.lease = absl::Seconds(10);
    o.lost_margin = absl::Seconds(5);
    return o;
  }
  // Both clocks move together: the JobManager's and the one the metrics read.
  void Advance(int64_t ms) {
    h_.clock().AdvanceMs(ms);
    clock_.AdvanceMs(ms);
  }
  std::vector<prometheus::MetricFamily> Scrape() { return metrics_.Collect(); }

  // Two nodes; a 2-GPU job that waits 3 s, runs, and is evicted when its node is lost; a
  // job that fails once and is retried; one that succeeds; a refused spec.
  void RunScenario() {
    h_.Connect("n1", /*gpus=*/4);
    h_.Connect("n2", /*gpus=*/4);
    v1::JobSpec short_grace = Spec(/*nodes=*/1, /*gpus=*/2);
    short_grace.set_grace_seconds(1);  // replaced once its node is lost (harness policy)
    auto lost = h_.Submit(short_grace);
    v1::JobSpec flaky = Spec(/*nodes=*/1, /*gpus=*/1);
    flaky.set_restart_policy(v1::RESTART_POLICY_ON_FAILURE);
    flaky.set_max_restarts(1);
    auto retried = h_.Submit(flaky);
    auto ok = h_.Submit(Spec(/*nodes=*/1, /*gpus=*/0));
    ASSERT_TRUE(lost.ok() && retried.ok() && ok.ok());
    lost_ = *lost;
    Advance(3'000);
    h_.Schedule();
    for (uint64_t id : {*lost, *retried, *ok}) {
      v1::Job job = h_.Get(id);
      h_.Report(job.attempts(0).placement(0).node(), Report(id, 1, Phase::PHASE_RUNNING));
    }
    lost_node_ = h_.Get(*lost).attempts(0).placement(0).node();
    std::string other = lost_node_ == "n1" ? "n2" : "n1";
    h_.Report(h_.Get(*ok).attempts(0).placement(0).node(), Report(*ok, 1, Phase::PHASE_EXITED));
    h_.Report(h_.Get(*retried).attempts(0).placement(0).node(),
              Report(*retried, 1, Phase::PHASE_EXITED, /*exit_code=*/1));
    ASSERT_FALSE(h_.Submit(Spec(/*nodes=*/1, /*gpus=*/64)).ok());
    Advance(16'000);  // the lost job ran 16 s without a checkpoint
    h_.jm().AgentHeartbeat(other);
    h_.Tick();
    ASSERT_EQ(h_.State(*lost), v1::JOB_STATE_PENDING);
  }

  FakeClock clock_;
  CoordinatorMetrics metrics_;
  Harness h_;
  uint64_t lost_ = 0;
  std::string lost_node_;
};

// A topology-bound gang (docs/topology.md) that cannot have one leaf: its attempt records
// the leaves it spans and the fewest it could have, its reason says so, and the spread is
// counted; one that gets its leaf is not.
TEST(TopologyMetrics, AGangSpreadBeyondItsMinimumIsCountedAndItsLeavesRecorded) {
  FakeClock clock;
  JobManagerOptions o = TestOptions();
  o.policy.topology_levels = {{"leaf", "topology.baton.io/leaf"}};
  CoordinatorMetrics metrics(&clock, o.policy);
  Harness h(o, "", &metrics);
  for (auto [node, leaf] : {std::pair{"n1", "a"}, {"n2", "a"}, {"n3", "b"}}) {
    v1::Register reg = Registration(node, 4);
    (*reg.mutable_labels())["topology.baton.io/leaf"] = leaf;
    h.Connect(node, 4, reg);
  }
  v1::JobSpec gang = Spec(/*nodes=*/2, /*gpus=*/4);
  gang.mutable_topology()->set_level("leaf");
  auto together = h.Submit(gang);
  ASSERT_TRUE(together.ok()) << together.status();
  h.Schedule();
  v1::Attempt first = h.Get(*together).attempts(0);
  EXPECT_EQ(
      std::vector<std::string>(first.topology_domains().begin(), first.topology_domains().end()),
      std::vector<std::string>{"a"});
  auto spread = h.Submit(Spec(/*nodes=*/1, /*gpus=*/4));  // takes n3: nothing left
  ASSERT_TRUE(spread.ok());
  h.Schedule();
  EXPECT_EQ(
      SampleValue(metrics.Collect(), "baton_topology_spread_gangs_total", {{"class", "training"}}),
      -1)
      << "no series: nothing spread";
  // Leaf a of two and leaf b of one; with one node of a busy, a 2-node gang spans both.
  ASSERT_TRUE(h.Cancel(*together).ok());
  ASSERT_TRUE(h.Cancel(*spread).ok());
  h.Report("n1", Report(*together, 1, Phase::PHASE_EXITED));
  h.Report("n2", Report(*together, 1, Phase::PHASE_EXITED));
  h.Report("n3", Report(*spread, 1, Phase::PHASE_EXITED));
  v1::JobSpec in_a = Spec(/*nodes=*/1, /*gpus=*/4);
  (*in_a.mutable_node_selector())["topology.baton.io/leaf"] = "a";  // one node of a stays busy
  auto hold = h.Submit(in_a);
  ASSERT_TRUE(hold.ok());
  h.Schedule();
  auto wide = h.Submit(gang);
  ASSERT_TRUE(wide.ok());
  h.Schedule();
  v1::Job job = h.Get(*wide);
  ASSERT_EQ(job.attempts_size(), 1) << job.message();
  EXPECT_EQ(job.attempts(0).topology_domains_size(), 2);
  EXPECT_EQ(job.attempts(0).topology_min_domains(), 1u);
  EXPECT_EQ(
      SampleValue(metrics.Collect(), "baton_topology_spread_gangs_total", {{"class", "training"}}),
      1);
}

TEST_F(MetricsScenario, CountsWhatTheScenarioDid) {
  RunScenario();
  auto m = Scrape();
  const std::map<std::string, std::string> training{{"class", "training"}, {"tenant", "vision"}};
  EXPECT_EQ(SampleValue(m, "baton_jobs_submitted_total", training), 3);
  EXPECT_EQ(SampleValue(m, "baton_jobs_finished_total", {{"state", "succeeded"}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_job_retries_total", {{"reason", "failure"}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_pending_jobs", training), 2) << "the evicted and the retried";
  EXPECT_EQ(SampleValue(m, "baton_running_jobs", training), 0);
  EXPECT_EQ(SampleValue(m, "baton_admission_wait_seconds", {{"class", "training"}}), 3);
  EXPECT_DOUBLE_EQ(HistogramSum(m, "baton_admission_wait_seconds"), 9.0) << "3 jobs, 3 s each";
  EXPECT_EQ(SampleValue(m, "baton_preemptions_total", {{"reason", "node_lost"}}), 1);
  EXPECT_DOUBLE_EQ(HistogramSum(m, "baton_preemption_lost_work_gpu_seconds"), 2 * 16.0);
  EXPECT_EQ(SampleValue(m, "baton_job_evictions_total", {{"job_id", std::to_string(lost_)}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_submissions_refused_total", {{"reason", "spec.gpus_per_node"}}),
            1);
  EXPECT_EQ(SampleValue(m, "baton_nodes", {{"state", "lost"}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_nodes", {{"state", "ready"}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_agents_connected"), 1);
  EXPECT_EQ(SampleValue(m, "baton_nodes_lost_total"), 1);
  EXPECT_EQ(SampleValue(m, "baton_events_total", {{"kind", "eviction"}}), 1);
  EXPECT_GT(SampleValue(m, "baton_store_write_duration_seconds"), 0);
  EXPECT_GT(SampleValue(m, "baton_scheduling_pass_duration_seconds"), 0);
  EXPECT_DOUBLE_EQ(SampleValue(m, "baton_pending_oldest_seconds", training), 16.0)
      << "the retried job waits since its failure";
  // Fair share, estimated from what ran: 3 GPUs for 16 s, decayed over a day's half-life.
  double usage = SampleValue(m, "baton_tenant_decayed_usage_gpu_seconds", {{"tenant", "vision"}});
  EXPECT_NEAR(usage, 2 * 16.0 + 1 * 0.0, 0.05);
  EXPECT_EQ(SampleValue(m, "baton_tenant_usage_share", {{"tenant", "vision"}}), 1);
  EXPECT_EQ(SampleValue(m, "baton_tenant_running_gpus", {{"tenant", "vision"}}), 0);
}

TEST_F(MetricsScenario, NamesAndLabelSetsAreTheListedOnes) {
  RunScenario();
  // What the scenario cannot reach yet (evictions to COOLDOWN arrive with preemption):
  v1::Job cooling;
  cooling.set_id(999);
  cooling.set_state(v1::JOB_STATE_COOLDOWN);
  cooling.set_evictions(1);
  cooling.mutable_spec()->set_priority_class("training");
  cooling.mutable_spec()->set_tenant("vision");
  metrics_.OnJobLoaded(cooling);
  v1::Job share = cooling;  // a running MPS share (shares_test.cc places them for real)
  share.set_id(998);
  share.set_state(v1::JOB_STATE_RUNNING);
  share.mutable_spec()->set_gpu_share_percent(25);
  share.mutable_spec()->set_gpu_memory_bytes(1ull << 30);
  v1::NodeAssignment* on = share.add_attempts()->add_placement();
  on->set_node("n1");
  on->add_gpu_ids("GPU-n1-0");
  metrics_.OnJobLoaded(share);
  metrics_.OnSubmitThrottled("vision", "rate");  // fair_use_test.cc drives the limiter
  metrics_.OnJobsDeleted(2);                     // and retention
  v1::Job spread = cooling;                      // TopologyMetrics above places one for real
  v1::Attempt* a = spread.add_attempts();
  a->add_topology_domains("a");
  a->add_topology_domains("b");
  a->set_topology_min_domains(1);
  v1::Event placed;
  placed.set_kind(v1::EVENT_KIND_SCHEDULING);
  placed.set_code("placed");
  metrics_.OnEvent(placed, &spread);
  EXPECT_EQ(CheckMetricList(Scrape(), CoordinatorMetricList(), /*all=*/true), "");
}

TEST_F(MetricsScenario, AJobsEvictionSeriesGoesWhenItEnds) {
  RunScenario();
  ASSERT_TRUE(h_.Cancel(lost_).ok());
  EXPECT_EQ(SampleValue(Scrape(), "baton_job_evictions_total", {{"job_id", std::to_string(lost_)}}),
            -1);
  EXPECT_EQ(SampleValue(Scrape(), "baton_pending_jobs", {{"class", "training"}}), 1);
}

TEST(CoordinatorMetrics, AFreshCoordinatorCountsWhatItRecovers) {
  TempDir dir;
  FakeClock clock;
  {
    CoordinatorMetrics before(&clock, Policy::Default());
    Harness h(TestOptions(), dir.path(), &before);
    h.Connect("n1", /*gpus=*/4);
    ASSERT_TRUE(h.Submit(Spec(/*nodes=*/1, /*gpus=*/2)).ok());
    ASSERT_FALSE(h.Submit(Spec(/*nodes=*/1, /*gpus=*/9)).ok());
    ASSERT_TRUE(h.Submit(Spec(/*nodes=*/1, /*gpus=*/1)).ok());
    h.Schedule();
  }
  CoordinatorMetrics after(&clock, Policy::Default());
  Harness h(TestOptions(), dir.path(), &after);
  auto m = after.Collect();
  EXPECT_EQ(SampleValue(m, "baton_running_jobs", {{"class", "training"}}), 2);
  EXPECT_EQ(SampleValue(m, "baton_tenant_running_gpus", {{"tenant", "vision"}}), 3);
  EXPECT_EQ(SampleValue(m, "baton_nodes", {{"state", "disconnected"}}), 1)
      << "nodes come back disconnected until their agents return";
  EXPECT_EQ(SampleValue(m, "baton_jobs_submitted_total", {{"class", "training"}}), -1)
      << "counters start again from zero, as Prometheus expects of a restart";
}

TEST(CoordinatorMetrics, TenantSharesFromTheSchedulerReplaceTheEstimate) {
  FakeClock clock;
  CoordinatorMetrics metrics(&clock, Policy::Default());
  sched::TenantShare a{.tenant = "vision",
                       .weight = 2,
                       .usage_gpu_seconds = 300,
                       .usage_share = 0.75,
                       .weight_share = 2.0 / 3,
                       .running_gpus = 4};
  sched::TenantShare b{.tenant = "speech",
                       .weight = 1,
                       .usage_gpu_seconds = 100,
                       .usage_share = 0.25,
                       .weight_share = 1.0 / 3,
                       .running_gpus = 0};
  metrics.OnTenantShares({a, b});
  auto m = metrics.Collect();
  EXPECT_EQ(SampleValue(m, "baton_tenant_decayed_usage_gpu_seconds", {{"tenant", "vision"}}), 300);
  EXPECT_EQ(SampleValue(m, "baton_tenant_usage_share", {{"tenant", "speech"}}), 0.25);
  EXPECT_DOUBLE_EQ(SampleValue(m, "baton_tenant_weight_share", {{"tenant", "vision"}}), 2.0 / 3);
  metrics.OnTenantShares({a});
  EXPECT_EQ(SampleValue(metrics.Collect(), "baton_tenant_usage_share", {{"tenant", "speech"}}), -1)
      << "a tenant no longer shown loses its series";
}

// Every baton_* name the alert rules and the dashboard use is one the daemons export.
TEST(Monitoring, RulesAndDashboardUseOnlyExportedMetrics) {
  std::set<std::string> known;
  for (const auto* list : {&CoordinatorMetricList(), &AgentMetricList(), &HaReplicaMetricList()}) {
    for (const auto& m : *list) known.insert(m.name);
  }
  std::string dir = std::string(BATON_SOURCE_DIR) + "/scripts/monitoring/";
  int used = 0;
  for (const char* file : {"alerts.yml", "dashboard.json"}) {
    std::ifstream in(dir + file);
    ASSERT_TRUE(in) << dir + file;
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    std::regex name("baton_[a-z_]+");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), name); it != std::sregex_iterator();
         ++it) {
      std::string n = it->str();
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (!known.count(n) && n.ends_with(suffix)) n.resize(n.size() - std::strlen(suffix));
      }
      EXPECT_TRUE(known.count(n)) << file << " uses " << it->str() << ", which nothing exports";
      ++used;
    }
  }
  EXPECT_GT(used, 30);
  std::ifstream dash(dir + "dashboard.json");
  auto json = nlohmann::json::parse(dash, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << "dashboard.json is not JSON";
  int targets = 0;
  for (const auto& panel : json["panels"]) {
    for (const auto& t : panel.value("targets", nlohmann::json::array())) {
      EXPECT_FALSE(t.value("expr", "").empty()) << panel.value("title", "");
      ++targets;
    }
  }
  EXPECT_GT(targets, 20);
}

}  // namespace
}  // namespace baton::testing

namespace baton::testing {
namespace {

TEST(CoordinatorMetrics, EachMpsPoolsSharesAreCountedWhileTheirAttemptsLive) {
  FakeClock clock;
  CoordinatorMetrics metrics(&clock, Policy::Default());
  JobManagerOptions o = TestOptions();
  for (auto& c : o.policy.classes) {
    if (c.name == "inference") c.gpu_sharing = "mps";
  }
  Harness h(o, "", &metrics);
  v1::Register reg = Registration("n1", 1, 8);
  reg.mutable_inventory()->mutable_gpus(0)->set_memory_bytes(80ull << 30);
  reg.mutable_inventory()->mutable_gpus(0)->set_mps_pool(true);
  h.Connect("n1", 1, reg);
  std::vector<uint64_t> ids;
  for (uint32_t percent : {60u, 30u}) {
    v1::JobSpec s = Spec(1, 1);
    s.set_priority_class("inference");
    s.set_gpu_share_percent(percent);
    s.set_gpu_memory_bytes(10ull << 30);
    s.set_cpu_millis_per_node(1000);
    s.set_memory_bytes_per_node(1ull << 30);
    auto id = h.Submit(s);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  h.Schedule();
  const std::map<std::string, std::string> pool{{"node", "n1"}, {"gpu", "GPU-n1-0"}};
  EXPECT_EQ(SampleValue(metrics.Collect(), "baton_mps_pool_allocated_percent", pool), 90);
  EXPECT_EQ(SampleValue(metrics.Collect(), "baton_mps_pool_allocated_memory_bytes", pool),
            20.0 * (1ull << 30));
  ASSERT_TRUE(h.Cancel(ids[0]).ok());
  h.Report("n1", Report(ids[0], 1, v1::AttemptReport::PHASE_EXITED));
  EXPECT_EQ(SampleValue(metrics.Collect(), "baton_mps_pool_allocated_percent", pool), 30);
}

}  // namespace
}  // namespace baton::testing
