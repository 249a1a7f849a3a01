// The node agent's Prometheus metrics: per job attempt on this node its CPU usage, CFS
// throttling (the "compute-limited" signal), memory usage and peak, limits, and its HTB
// class's bytes, drops and overlimits (from the Isolator's stats, refreshed every stats
// interval); the round trip of the agent's heartbeats (a histogram: how long its reports
// and commands wait); `baton_job_gpu_info` per GPU so DCGM exporter series join to jobs on the
// GPU UUID; the node's capacity and what attempts leave free. Series of an attempt go
// when it ends. Every series carries `node`; per-attempt series carry `job_id` and
// `attempt` (not `job`: Prometheus gives every target a `job` label of its own).
// The Agent feeds it as its AttemptObserver; MetricsServer collects it. Thread-safe.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics_server.h"
#include "launcher/agent/attempt_observer.h"
#include "prometheus/collectable.h"

namespace baton {

class AgentMetrics : public AttemptObserver, public prometheus::Collectable {
 public:
  // `connected` (may be null) tells whether the coordinator stream is up.
  AgentMetrics(std::string node, const v1::Inventory& inventory,
               std::function<bool()> connected = nullptr);

  void OnAttemptStarted(const v1::Launch& launch, const v1::AttemptIsolation& iso) override;
  void OnAttemptStats(const v1::AttemptIsolation& iso) override;
  void OnAttemptEnded(uint64_t job, uint32_t attempt) override;
  void OnHeartbeatAck(absl::Duration round_trip) override;

  // Upper bounds (seconds) of baton_agent_heartbeat_ack_seconds' buckets.
  static const std::vector<double>& HeartbeatAckBuckets();

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Attempt {
    std::string tenant, priority_class, kind;
    uint64_t cpu_millis = 0;  // what the placement gave this node
    uint64_t memory_bytes = 0;
    std::vector<std::string> gpus;
    v1::AttemptIsolation iso;
  };
  using Key = std::pair<uint64_t, uint32_t>;

  const std::string node_;
  const uint32_t cpus_;
  const uint64_t memory_bytes_;
  const uint32_t gpus_;
  const std::function<bool()> connected_;
  mutable std::mutex mu_;
  std::map<Key, Attempt> attempts_;
  // Heartbeat round trips: per bucket (not cumulative; the last is +Inf), sum, count.
  std::vector<uint64_t> ack_buckets_;
  double ack_sum_seconds_ = 0;
  uint64_t ack_count_ = 0;
};

}  // namespace baton
