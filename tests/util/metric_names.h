// Every metric baton exports, with its type and label names: the contract of the
// dashboards and alert rules in scripts/monitoring. Tests compare what the daemons
// collect against these lists, so renaming a metric or a label fails a test; change the
// list (and scripts/monitoring) on purpose. Header-only; needs prometheus-cpp::core.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "prometheus/metric_family.h"

namespace baton::testing {

struct ExpectedMetric {
  std::string name;
  prometheus::MetricType type;
  std::vector<std::string> labels;  // sorted
};

inline const std::vector<ExpectedMetric>& CoordinatorMetricList() {
  using T = prometheus::MetricType;
  static const std::vector<ExpectedMetric> list = {
      {"baton_pending_jobs", T::Gauge, {"class", "tenant"}},
      {"baton_running_jobs", T::Gauge, {"class", "tenant"}},
      {"baton_cooldown_jobs", T::Gauge, {"class", "tenant"}},
      {"baton_pending_oldest_seconds", T::Gauge, {"class", "tenant"}},
      {"baton_jobs_submitted_total", T::Counter, {"class", "tenant"}},
      {"baton_jobs_finished_total", T::Counter, {"class", "state", "tenant"}},
      {"baton_job_retries_total", T::Counter, {"class", "reason"}},
      {"baton_admission_wait_seconds", T::Histogram, {"class"}},
      {"baton_preemptions_total", T::Counter, {"reason"}},
      {"baton_topology_spread_gangs_total", T::Counter, {"class"}},
      {"baton_job_evictions_total", T::Counter, {"class", "job_id", "tenant"}},
      {"baton_preemption_lost_work_gpu_seconds", T::Histogram, {"reason"}},
      {"baton_scheduling_pass_duration_seconds", T::Histogram, {}},
      {"baton_store_write_duration_seconds", T::Histogram, {}},
      {"baton_tenant_decayed_usage_gpu_seconds", T::Gauge, {"tenant"}},
      {"baton_tenant_usage_share", T::Gauge, {"tenant"}},
      {"baton_tenant_weight_share", T::Gauge, {"tenant"}},
      {"baton_tenant_running_gpus", T::Gauge, {"tenant"}},
      {"baton_mps_pool_allocated_percent", T::Gauge, {"gpu", "node"}},
      {"baton_mps_pool_allocated_memory_bytes", T::Gauge, {"gpu", "node"}},
      {"baton_agents_connected", T::Gauge, {}},
      {"baton_nodes", T::Gauge, {"state"}},
      {"baton_nodes_lost_total", T::Counter, {}},
      {"baton_submissions_refused_total", T::Counter, {"reason"}},
      {"baton_submissions_throttled_total", T::Counter, {"limit", "tenant"}},
      {"baton_jobs_deleted_total", T::Counter, {}},
      {"baton_events_total", T::Counter, {"kind"}},
      {"baton_build_info", T::Gauge, {"component", "version"}},
  };
  return list;
}

// An HA coordinator replica's own (coordinator/ha/ha_metrics.h), beside the list above
// once it leads.
inline const std::vector<ExpectedMetric>& HaReplicaMetricList() {
  using T = prometheus::MetricType;
  static const std::vector<ExpectedMetric> list = {
      {"baton_ha_leader", T::Gauge, {"replica"}},
      {"baton_ha_epoch", T::Gauge, {"replica"}},
      {"baton_ha_applied_index", T::Gauge, {"replica"}},
      {"baton_ha_log_lag_entries", T::Gauge, {"replica"}},
      {"baton_ha_leader_changes_total", T::Counter, {"replica"}},
  };
  return list;
}

inline const std::vector<ExpectedMetric>& AgentMetricList() {
  using T = prometheus::MetricType;
  const std::vector<std::string> attempt = {"attempt", "job_id", "node"};
  static const std::vector<ExpectedMetric> list = {
      {"baton_build_info", T::Gauge, {"component", "version"}},
      {"baton_agent_connected", T::Gauge, {"node"}},
      {"baton_agent_heartbeat_ack_seconds", T::Histogram, {"node"}},
      {"baton_job_info", T::Gauge, {"attempt", "class", "job_id", "kind", "node", "tenant"}},
      {"baton_job_gpu_info", T::Gauge, {"attempt", "job_id", "node", "uuid"}},
      {"baton_job_cpu_usage_seconds_total", T::Counter, attempt},
      {"baton_job_cpu_periods_total", T::Counter, attempt},
      {"baton_job_cpu_throttled_periods_total", T::Counter, attempt},
      {"baton_job_cpu_throttled_seconds_total", T::Counter, attempt},
      {"baton_job_memory_usage_bytes", T::Gauge, attempt},
      {"baton_job_memory_peak_bytes", T::Gauge, attempt},
      {"baton_job_cpu_quota_cores", T::Gauge, attempt},
      {"baton_job_memory_limit_bytes", T::Gauge, attempt},
      {"baton_job_network_transmit_bytes_total", T::Counter, attempt},
      {"baton_job_network_dropped_packets_total", T::Counter, attempt},
      {"baton_job_network_overlimit_packets_total", T::Counter, attempt},
      {"baton_node_running_attempts", T::Gauge, {"node"}},
      {"baton_node_cpus", T::Gauge, {"node"}},
      {"baton_node_free_cpus", T::Gauge, {"node"}},
      {"baton_node_memory_bytes", T::Gauge, {"node"}},
      {"baton_node_free_memory_bytes", T::Gauge, {"node"}},
      {"baton_node_gpus", T::Gauge, {"node"}},
      {"baton_node_free_gpus", T::Gauge, {"node"}},
  };
  return list;
}

// What is wrong with `families` against `expected`, one line each; "" when they agree.
// With `all`, every expected metric must be there too.
inline std::string CheckMetricList(const std::vector<prometheus::MetricFamily>& families,
                                   const std::vector<ExpectedMetric>& expected, bool all) {
  std::map<std::string, const ExpectedMetric*> by_name;
  for (const auto& e : expected) by_name[e.name] = &e;
  std::string problems;
  std::set<std::string> seen;
  for (const auto& f : families) {
    auto it = by_name.find(f.name);
    if (it == by_name.end()) {
      problems += "unexpected metric " + f.name + "\n";
      continue;
    }
    if (f.metric.empty()) continue;
    seen.insert(f.name);
    if (f.type != it->second->type) problems += f.name + ": wrong type\n";
    for (const auto& m : f.metric) {
      std::vector<std::string> names;
      for (const auto& l : m.label) names.push_back(l.name);
      std::sort(names.begin(), names.end());
      if (names != it->second->labels) {
        std::string got;
        for (const auto& n : names) got += n + ",";
        problems += f.name + ": labels {" + got + "} differ from the list\n";
        break;
      }
    }
  }
  if (all) {
    for (const auto& e : expected) {
      if (!seen.count(e.name)) problems += "missing metric " + e.name + "\n";
    }
  }
  return problems;
}

// The first sample of `name` whose labels include all of `labels`; null when none.
inline const prometheus::ClientMetric* FindSample(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name,
    const std::map<std::string, std::string>& labels, prometheus::MetricType* type = nullptr) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      size_t matched = 0;
      for (const auto& l : m.label) {
        auto it = labels.find(l.name);
        matched += it != labels.end() && it->second == l.value;
      }
      if (matched != labels.size()) continue;
      if (type) *type = f.type;
      return &m;
    }
  }
  return nullptr;
}

// A sample's value: counter or gauge value, histogram sample count; -1 when absent.
inline double SampleValue(const std::vector<prometheus::MetricFamily>& families,
                          const std::string& name,
                          const std::map<std::string, std::string>& labels = {}) {
  prometheus::MetricType type = prometheus::MetricType::Untyped;
  const prometheus::ClientMetric* m = FindSample(families, name, labels, &type);
  if (m == nullptr) return -1;
  switch (type) {
    case prometheus::MetricType::Counter:
      return m->counter.value;
    case prometheus::MetricType::Gauge:
      return m->gauge.value;
    case prometheus::MetricType::Histogram:
      return static_cast<double>(m->histogram.sample_count);
    default:
      return m->untyped.value;
  }
}

// A histogram sample's sum; -1 when absent.
inline double HistogramSum(const std::vector<prometheus::MetricFamily>& families,
                           const std::string& name,
                           const std::map<std::string, std::string>& labels = {}) {
  const prometheus::ClientMetric* m = FindSample(families, name, labels);
  return m ? m->histogram.sample_sum : -1;
}

}  // namespace baton::testing
