#include "launcher/agent/agent_metrics.h"

#include <algorithm>
#include <limits>

#include "common/version.h"
#include "launcher/agent/isolation/net_caps.h"
#include "prometheus/metric_family.h"

namespace baton {
namespace {

using prometheus::MetricType;
using Labels = std::vector<prometheus::ClientMetric::Label>;

// Families built at each scrape, in first-use order.
class Families {
 public:
  void Add(const char* name, MetricType type, const char* help, Labels labels, double value) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, out_.size()).first;
      out_.push_back({name, help, type, {}});
    }
    prometheus::ClientMetric m;
    std::sort(labels.begin(), labels.end());
    m.label = std::move(labels);
    (type == MetricType::Counter ? m.counter.value : m.gauge.value) = value;
    out_[it->second].metric.push_back(std::move(m));
  }
  // A histogram from per-bucket counts (the last one +Inf) over `bounds`.
  void AddHistogram(const char* name, const char* help, Labels labels,
                    const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                    double sum) {
    prometheus::ClientMetric m;
    std::sort(labels.begin(), labels.end());
    m.label = std::move(labels);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i];
      m.histogram.bucket.push_back(
          {cumulative, i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity()});
    }
    m.histogram.sample_count = cumulative;
    m.histogram.sample_sum = sum;
    out_.push_back({name, help, MetricType::Histogram, {std::move(m)}});
  }
  std::vector<prometheus::MetricFamily> Take() { return std::move(out_); }

 private:
  std::vector<prometheus::MetricFamily> out_;
  std::map<std::string, size_t> index_;
};

std::string KindName(v1::WorkloadKind kind) {
  return kind == v1::WORKLOAD_KIND_INFERENCE ? "inference" : "training";
}

}  // namespace

AgentMetrics::AgentMetrics(std::string node, const v1::Inventory& inventory,
                           std::function<bool()> connected)
    : node_(std::move(node)),
      cpus_(inventory.cpus()),
      memory_bytes_(inventory.memory_bytes()),
      gpus_(static_cast<uint32_t>(inventory.gpus_size())),
      connected_(std::move(connected)),
      ack_buckets_(HeartbeatAckBuckets().size() + 1, 0) {}

const std::vector<double>& AgentMetrics::HeartbeatAckBuckets() {
  static const std::vector<double> bounds = {0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015,
                                             0.02,  0.03,  0.04,  0.05,  0.075,  0.1,  0.15,
                                             0.2,   0.3,   0.5,   1,     2,      5,    10};
  return bounds;
}

void AgentMetrics::OnHeartbeatAck(absl::Duration round_trip) {
  double seconds = absl::FDivDuration(round_trip, absl::Seconds(1));
  const auto& bounds = HeartbeatAckBuckets();
  size_t i = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++ack_buckets_[i];
  ack_sum_seconds_ += seconds;
  ++ack_count_;
}

void AgentMetrics::OnAttemptStarted(const v1::Launch& l, const v1::AttemptIsolation& iso) {
  Attempt a;
  a.tenant = l.spec().tenant();
  a.priority_class = l.spec().priority_class();
  v1::WorkloadKind kind =
      l.kind() != v1::WORKLOAD_KIND_UNSPECIFIED ? l.kind() : iso.limits().kind();
  a.kind = KindName(kind);
  a.cpu_millis = l.spec().cpu_millis_per_node();
  a.memory_bytes = l.spec().memory_bytes_per_node();
  if (l.node_rank() < static_cast<uint32_t>(l.placement_size())) {
    const v1::NodeAssignment& me = l.placement(l.node_rank());
    if (me.cpu_millis()) a.cpu_millis = me.cpu_millis();
    if (me.memory_bytes()) a.memory_bytes = me.memory_bytes();
    a.gpus.assign(me.gpu_ids().begin(), me.gpu_ids().end());
  }
  a.iso = iso;
  std::lock_guard<std::mutex> lock(mu_);
  attempts_[{l.job_id(), l.attempt()}] = std::move(a);
}

void AgentMetrics::OnAttemptStats(const v1::AttemptIsolation& iso) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find({iso.job_id(), iso.attempt()});
  if (it != attempts_.end()) it->second.iso = iso;  // unknown: not started here (yet)
}

void AgentMetrics::OnAttemptEnded(uint64_t job, uint32_t attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.erase({job, attempt});
}

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const {
  Families f;
  constexpr auto kGauge = MetricType::Gauge;
  constexpr auto kCounter = MetricType::Counter;
  Labels node{{"node", node_}};
  f.Add("baton_build_info", kGauge, "Always 1: the version of this build",
        {{"component", "agent"}, {"version", Version()}}, 1);
  f.Add("baton_agent_connected", kGauge, "1 while the coordinator stream is up", node,
        connected_ && connected_() ? 1 : 0);
  std::lock_guard<std::mutex> lock(mu_);
  f.AddHistogram("baton_agent_heartbeat_ack_seconds",
                 "Round trip of the agent's heartbeats to the coordinator (sent to acknowledged)",
                 node, HeartbeatAckBuckets(), ack_buckets_, ack_sum_seconds_);
  double used_cpus = 0, used_memory = 0, used_gpus = 0;
  for (const auto& [key, a] : attempts_) {
    used_cpus += static_cast<double>(a.cpu_millis) / 1000.0;
    used_memory += static_cast<double>(a.memory_bytes);
    used_gpus += static_cast<double>(a.gpus.size());
    Labels id{{"node", node_},
              {"job_id", std::to_string(key.first)},
              {"attempt", std::to_string(key.second)}};
    auto with = [&id](Labels more) {
      more.insert(more.end(), id.begin(), id.end());
      return more;
    };
    f.Add("baton_job_info", kGauge,
          "Always 1: an attempt running on this node, with its job's tenant, class and kind",
          with({{"tenant", a.tenant}, {"class", a.priority_class}, {"kind", a.kind}}), 1);
    for (const auto& uuid : a.gpus) {
      f.Add("baton_job_gpu_info", kGauge,
            "Always 1: a GPU the attempt holds (join DCGM exporter series on the UUID)",
            with({{"uuid", uuid}}), 1);
    }
    const v1::IsolationLimits& lim = a.iso.limits();
    if (lim.cgroup().empty()) continue;  // no cgroup (isolation none): no stats
    const v1::IsolationStats& st = a.iso.stats();
    f.Add("baton_job_cpu_usage_seconds_total", kCounter, "CPU time used by the attempt's cgroup",
          id, static_cast<double>(st.cpu_usage_us()) / 1e6);
    f.Add("baton_job_cpu_periods_total", kCounter,
          "CFS periods in which the attempt had runnable tasks", id,
          static_cast<double>(st.nr_periods()));
    f.Add("baton_job_cpu_throttled_periods_total", kCounter,
          "CFS periods in which the attempt ran out of its CPU quota", id,
          static_cast<double>(st.nr_throttled()));
    f.Add("baton_job_cpu_throttled_seconds_total", kCounter,
          "Time the attempt's tasks were throttled by its CPU quota", id,
          static_cast<double>(st.throttled_us()) / 1e6);
    f.Add("baton_job_memory_usage_bytes", kGauge, "Memory the attempt's cgroup uses now", id,
          static_cast<double>(st.memory_current_bytes()));
    f.Add("baton_job_memory_peak_bytes", kGauge, "Most memory the attempt's cgroup used", id,
          static_cast<double>(st.memory_peak_bytes()));
    if (lim.cpu_quota_millis()) {
      f.Add("baton_job_cpu_quota_cores", kGauge, "The attempt's CFS quota, in cores", id,
            static_cast<double>(lim.cpu_quota_millis()) / 1000.0);
    }
    if (lim.memory_limit_bytes()) {
      f.Add("baton_job_memory_limit_bytes", kGauge, "The attempt's memory limit", id,
            static_cast<double>(lim.memory_limit_bytes()));
    }
    // No HTB class, or the inference class all inference attempts share.
    if (lim.net_class().empty() || lim.net_class() == HtbClassId(NetCaps::kInferenceMinor)) {
      continue;
    }
    f.Add("baton_job_network_transmit_bytes_total", kCounter,
          "Bytes sent through the attempt's HTB class", id, static_cast<double>(st.net_bytes()));
    f.Add("baton_job_network_dropped_packets_total", kCounter,
          "Packets the attempt's HTB class dropped", id, static_cast<double>(st.net_drops()));
    f.Add("baton_job_network_overlimit_packets_total", kCounter,
          "Packets the attempt's HTB class held back at its ceiling", id,
          static_cast<double>(st.net_overlimits()));
  }
  f.Add("baton_node_running_attempts", kGauge, "Attempts running on this node", node,
        static_cast<double>(attempts_.size()));
  f.Add("baton_node_cpus", kGauge, "Logical CPUs of this node", node, cpus_);
  f.Add("baton_node_free_cpus", kGauge, "CPUs no attempt's placement holds", node,
        std::max(0.0, cpus_ - used_cpus));
  f.Add("baton_node_memory_bytes", kGauge, "Physical memory of this node", node,
        static_cast<double>(memory_bytes_));
  f.Add("baton_node_free_memory_bytes", kGauge, "Memory no attempt's placement holds", node,
        std::max(0.0, static_cast<double>(memory_bytes_) - used_memory));
  f.Add("baton_node_gpus", kGauge, "GPUs (or MIG slices) of this node", node, gpus_);
  f.Add("baton_node_free_gpus", kGauge, "GPUs no attempt holds", node,
        std::max(0.0, gpus_ - used_gpus));
  return f.Take();
}

}  // namespace baton
