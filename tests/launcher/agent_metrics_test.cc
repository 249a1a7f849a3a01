// The agent's Prometheus metrics as the Agent feeds them: per-attempt series from its
// limits and stats, GPU info for DCGM joins, node capacity, series gone with the attempt;
// names and label sets held to tests/util/metric_names.h.
#include "launcher/agent/agent_metrics.h"

#include <cmath>

#include "gtest/gtest.h"
#include "tests/util/metric_names.h"

namespace baton::testing {
namespace {

v1::Inventory Node(uint32_t cpus, uint32_t gpus) {
  v1::Inventory inv;
  inv.set_cpus(cpus);
  inv.set_memory_bytes(64ull << 30);
  for (uint32_t i = 0; i < gpus; ++i) inv.add_gpus()->set_uuid("GPU-" + std::to_string(i));
  return inv;
}

v1::Launch Launch(uint64_t job, uint32_t attempt, std::vector<std::string> gpus) {
  v1::Launch l;
  l.set_job_id(job);
  l.set_attempt(attempt);
  l.set_kind(v1::WORKLOAD_KIND_INFERENCE);
  l.mutable_spec()->set_tenant("search");
  l.mutable_spec()->set_priority_class("inference");
  v1::NodeAssignment* me = l.add_placement();
  me->set_cpu_millis(2500);
  me->set_memory_bytes(4ull << 30);
  for (auto& g : gpus) me->add_gpu_ids(g);
  return l;
}

// Limits and stats as the Isolator reports them for a cgroup with an HTB class.
v1::AttemptIsolation Isolation(uint64_t job, uint32_t attempt, uint64_t throttled) {
  v1::AttemptIsolation iso;
  iso.set_job_id(job);
  iso.set_attempt(attempt);
  iso.mutable_limits()->set_cgroup("baton/n1/job-7-1");
  iso.mutable_limits()->set_cpu_quota_millis(2500);
  iso.mutable_limits()->set_memory_limit_bytes(5ull << 30);
  iso.mutable_limits()->set_net_class("1:100");
  v1::IsolationStats* st = iso.mutable_stats();
  st->set_cpu_usage_us(1'500'000);
  st->set_nr_periods(100);
  st->set_nr_throttled(throttled);
  st->set_throttled_us(250'000);
  st->set_memory_current_bytes(1 << 20);
  st->set_memory_peak_bytes(2 << 20);
  st->set_net_bytes(12345);
  st->set_net_drops(3);
  st->set_net_overlimits(9);
  return iso;
}

const std::map<std::string, std::string> kJob7{{"job_id", "7"}, {"attempt", "1"}, {"node", "n1"}};

TEST(AgentMetrics, AnAttemptsSeriesCarryItsStatsAndGoWhenItEnds) {
  bool connected = true;
  AgentMetrics m("n1", Node(/*cpus=*/8, /*gpus=*/4), [&] { return connected; });
  m.OnAttemptStats(Isolation(7, 1, 5));  // before its start: not an attempt of this node yet
  EXPECT_EQ(SampleValue(m.Collect(), "baton_job_info", kJob7), -1);
  m.OnAttemptStarted(Launch(7, 1, {"GPU-1", "GPU-3"}), Isolation(7, 1, 0));
  m.OnAttemptStats(Isolation(7, 1, 40));
  auto s = m.Collect();
  EXPECT_EQ(
      SampleValue(
          s, "baton_job_info",
          {{"job_id", "7"}, {"kind", "inference"}, {"class", "inference"}, {"tenant", "search"}}),
      1);
  EXPECT_EQ(SampleValue(s, "baton_job_gpu_info", {{"job_id", "7"}, {"uuid", "GPU-3"}}), 1);
  EXPECT_EQ(SampleValue(s, "baton_job_cpu_throttled_periods_total", kJob7), 40);
  EXPECT_EQ(SampleValue(s, "baton_job_cpu_periods_total", kJob7), 100);
  EXPECT_DOUBLE_EQ(SampleValue(s, "baton_job_cpu_usage_seconds_total", kJob7), 1.5);
  EXPECT_DOUBLE_EQ(SampleValue(s, "baton_job_cpu_throttled_seconds_total", kJob7), 0.25);
  EXPECT_DOUBLE_EQ(SampleValue(s, "baton_job_cpu_quota_cores", kJob7), 2.5);
  EXPECT_EQ(SampleValue(s, "baton_job_memory_peak_bytes", kJob7), 2 << 20);
  EXPECT_EQ(SampleValue(s, "baton_job_network_dropped_packets_total", kJob7), 3);
  EXPECT_EQ(SampleValue(s, "baton_job_network_overlimit_packets_total", kJob7), 9);
  EXPECT_DOUBLE_EQ(SampleValue(s, "baton_node_free_cpus"), 5.5);
  EXPECT_EQ(SampleValue(s, "baton_node_free_gpus"), 2);
  EXPECT_EQ(SampleValue(s, "baton_agent_connected", {{"node", "n1"}}), 1);
  EXPECT_EQ(CheckMetricList(s, AgentMetricList(), /*all=*/true), "");

  m.OnAttemptEnded(7, 1);
  connected = false;
  s = m.Collect();
  EXPECT_EQ(SampleValue(s, "baton_job_info", kJob7), -1);
  EXPECT_EQ(SampleValue(s, "baton_job_gpu_info", {{"job_id", "7"}}), -1);
  EXPECT_EQ(SampleValue(s, "baton_job_cpu_throttled_periods_total", kJob7), -1);
  EXPECT_EQ(SampleValue(s, "baton_node_free_gpus"), 4);
  EXPECT_EQ(SampleValue(s, "baton_agent_connected"), 0);
  EXPECT_EQ(CheckMetricList(s, AgentMetricList(), /*all=*/false), "");
}

TEST(AgentMetrics, WithoutACgroupOnlyTheJobAndGpuInfoShow) {
  AgentMetrics m("n1", Node(/*cpus=*/8, /*gpus=*/4));
  m.OnAttemptStarted(Launch(7, 1, {"GPU-0"}), v1::AttemptIsolation());
  auto s = m.Collect();
  EXPECT_EQ(SampleValue(s, "baton_job_gpu_info", {{"uuid", "GPU-0"}}), 1);
  EXPECT_EQ(SampleValue(s, "baton_job_cpu_usage_seconds_total", kJob7), -1)
      << "isolation none: no cgroup, no figures rather than zeros";
  EXPECT_EQ(SampleValue(s, "baton_agent_connected"), 0);
}

TEST(AgentMetrics, HeartbeatRoundTripsFillTheirBuckets) {
  AgentMetrics m("n1", Node(/*cpus=*/8, /*gpus=*/0));
  for (int ms : {0, 1, 4, 4, 30, 50, 51, 20'000}) m.OnHeartbeatAck(absl::Milliseconds(ms));
  auto s = m.Collect();
  const prometheus::ClientMetric* h =
      FindSample(s, "baton_agent_heartbeat_ack_seconds", {{"node", "n1"}});
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->histogram.sample_count, 8u);
  EXPECT_NEAR(h->histogram.sample_sum, 20.140, 1e-9);
  auto upto = [&](double bound) -> int64_t {
    for (const auto& b : h->histogram.bucket) {
      if (std::abs(b.upper_bound - bound) < 1e-12) return static_cast<int64_t>(b.cumulative_count);
    }
    return -1;
  };
  EXPECT_EQ(upto(0.001), 2);  // 0 and 1 ms: bounds are inclusive
  EXPECT_EQ(upto(0.005), 4);
  EXPECT_EQ(upto(0.03), 5);
  EXPECT_EQ(upto(0.05), 6);
  EXPECT_EQ(upto(10), 7);
  EXPECT_EQ(h->histogram.bucket.back().cumulative_count, 8u);
  EXPECT_TRUE(std::isinf(h->histogram.bucket.back().upper_bound));
  EXPECT_EQ(CheckMetricList(s, AgentMetricList(), /*all=*/false), "");
}

}  // namespace
}  // namespace baton::testing
