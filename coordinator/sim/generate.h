// Traces for the simulator that do not come from a cluster of one's own: synthetic ones
// with the published shape of GPU-cluster workloads (Philly, Helios, Alibaba PAI: heavy-
// tailed log-normal durations, most jobs 1 GPU, a few large gangs, submissions and
// inference load following the day), and conversions of the public Helios and
// Philly-style job logs (docs/simulator.md maps their columns). Used by `baton-sim
// generate` and `baton-sim convert`. Pure functions (seeded); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/sim/trace.h"

namespace baton::sim {

struct SyntheticOptions {
  uint64_t jobs = 1000;                      // batch jobs (inference replicas come on top)
  double days = 1;                           // submissions spread over this many days
  uint64_t seed = 1;                         // same seed, same trace
  uint32_t tenants = 4;                      // team-a, team-b, ... with Zipf-like activity
  uint32_t cluster_gpus = 64;                // batch GPU-time is scaled to `load` of these
  double load = 0.8;                         // offered batch load over the span
  uint32_t gpus_per_node = 8;                // gangs above this take whole nodes
  uint32_t max_gang_nodes = 16;              // the largest gang
  uint32_t services = 2;                     // inference services (tenant serving, class inference)
  uint32_t base_replicas = 2;                // per service, always on
  uint32_t peak_replicas = 4;                // per service, added for the daytime peak
  std::string inference_pool = "inference";  // "" for the default pool
  Time checkpoint_interval_ms = 30 * 60'000;  // training; labeling every half of it
};

std::vector<TraceJob> GenerateTrace(const SyntheticOptions& options);

enum class LogFormat { kHelios, kPhilly };

struct ConvertOptions {
  LogFormat format = LogFormat::kHelios;
  std::string priority_class = "training";
  uint32_t gpus_per_node = 8;  // gangs without a node count are packed on nodes of this
  Time checkpoint_interval_ms = 30 * 60'000;
  bool keep_failed = true;  // failed and killed jobs ran too: they held GPUs
};

// A job log as CSV with a header row (docs/simulator.md): one trace job per GPU job,
// times from the first submit. InvalidArgument naming file, line and column.
absl::StatusOr<std::vector<TraceJob>> ConvertJobLog(const std::string& csv,
                                                    const std::string& source,
                                                    const ConvertOptions& options);

}  // namespace baton::sim
