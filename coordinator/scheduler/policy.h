// Scheduling policy as plain data: priority classes, tenants (weights and quotas),
// pools, per-job limits and the fair-share half-life. Filled by
// coordinator/policy_config.cc (YAML) or baton::Policy::Default(); read by Plan and by
// the coordinator's admission. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/resources.h"
#include "coordinator/scheduler/cluster_view.h"

namespace baton::sched {

// A quantity with no limit (borrowing and lending limits).
constexpr Resources kUnlimited{std::numeric_limits<uint64_t>::max(),
                               std::numeric_limits<uint64_t>::max(),
                               std::numeric_limits<uint32_t>::max()};

struct PriorityClass {
  std::string name;
  int32_t value = 0;              // higher runs first; distinct across classes
  bool preemptible = true;        // may be evicted; only preemptible classes borrow quota
  bool service = false;           // inference: restarts always, no max runtime, never shares a
                                  // physical GPU with training
  bool may_preempt = true;        // may evict strictly lower classes
  int64_t cooldown_base_s = 60;   // wait after the first eviction, doubling per eviction
  int64_t cooldown_cap_s = 3600;  // the doubling stops here
  int64_t min_runtime_s = 300;    // no eviction this soon after the attempt started
  // May evict a job still inside its minimum runtime (inference-critical by default: a
  // production outage does not wait for a training job's first checkpoint).
  bool evicts_within_min_runtime = false;
  // The topology its jobs get when their spec names none (level "": none).
  TopologyRequest topology;
  // "mps": its jobs may ask for a share of one GPU (JobSpec.gpu_share_percent); "": never.
  // Service (inference) classes only: training never shares a GPU.
  std::string gpu_sharing;
  // With gpu_sharing: the user its shares run as (an MPS service user), whoever submitted
  // them, so that shares of several owners may share one GPU (an MPS server serves one
  // uid). "": each share runs as its owner, and a GPU holds one owner's shares at a time.
  std::string mps_user;
};

// Where a level named in the policy without a '/' finds its label: "leaf" is
// "topology.baton.io/leaf".
inline constexpr char kTopologyLabelPrefix[] = "topology.baton.io/";

// One level of the network's switch tree: nodes with equal values of `label` (and of
// every level above) form one domain. `name` is what requests say ("leaf").
struct TopologyLevel {
  std::string name;
  std::string label;  // "topology.baton.io/leaf"
};

struct TenantPolicy {
  std::string name;
  double weight = 1;                       // fair share: usage is divided by it
  std::optional<Resources> nominal;        // guaranteed; nullopt: no quota at all
  Resources borrowing_limit = kUnlimited;  // most it may use beyond nominal
  Resources lending_limit = kUnlimited;    // most of its idle nominal others may use
};

struct PoolPolicy {
  std::string name;
  std::vector<std::string> classes;  // classes allowed in the pool; empty: every class
};

// Per-job limits; 0 means no limit. Admission rejects specs outside them, and Plan
// marks such jobs infeasible.
struct JobLimits {
  uint32_t max_nodes = 0;
  uint32_t max_gpus_per_node = 0;
  uint32_t max_gpus_per_job = 0;
  uint64_t max_cpu_millis_per_node = 0;
  uint64_t max_memory_bytes_per_node = 0;
  uint64_t min_cpu_millis_per_rank = 0;
  uint64_t min_memory_bytes_per_rank = 0;
};

struct Policy {
  std::vector<PriorityClass> classes;
  std::vector<TenantPolicy> tenants;  // unlisted tenants get `default_tenant`
  TenantPolicy default_tenant;        // weight 1, no quota
  std::vector<PoolPolicy> pools;      // unlisted pools take every class
  std::string default_pool = "default";
  JobLimits job_limits;
  int64_t fair_share_half_life_s = 24 * 3600;
  // Preemption searches per pass; later preemptors wait for the next pass (every
  // eviction takes a checkpoint anyway, so there is no hurry to plan hundreds at once).
  uint32_t preemption_searches_per_pass = 16;
  // Inference and training never share a NUMA node (a hard rule; off: training only
  // prefers the NUMA nodes inference does not use). `baton explain` names it when it is
  // what keeps a job waiting.
  bool inference_numa_exclusive = false;
  // The switch tree, lowest level first (docs/topology.md); empty: no topology, and a
  // request naming a level is refused.
  std::vector<TopologyLevel> topology_levels;

  const PriorityClass* Find(std::string_view name) const;
  const TenantPolicy& Tenant(std::string_view name) const;
  // The MPS service user a share of class `cls` runs as (its mps_user where the class
  // shares), or "": the job's owner.
  std::string ShareUser(std::string_view cls) const;
};

// How long an evicted job waits after its `evictions`-th eviction: base, doubling,
// capped. 0 evictions: no cooldown.
int64_t CooldownMs(const PriorityClass& cls, uint32_t evictions);

// InvalidArgument naming the limit a request breaks, or OK.
absl::Status CheckJobLimits(const JobLimits& limits, const JobRequest& request);

// Whether a job could ever run under the policy, whatever the cluster: the per-job
// limits; a known class, allowed in its pool; MIG slices only for inference (service)
// classes, one rank each and never with mpi; its tenant's quota (nominal plus borrowing limit, or
// nominal alone for classes that never borrow); a topology level the policy has.
// InvalidArgument naming the first rule it breaks.
// Admission calls it at submit; Plan reports such jobs kInfeasible with the same text.
// The request's topology, or its class's default when it names none.
const TopologyRequest& EffectiveTopology(const PriorityClass& cls, const JobRequest& request);
// The index of the level named `name` in policy.topology_levels, or -1.
int32_t TopologyLevelIndex(const Policy& policy, std::string_view name);

absl::Status CheckRequest(const Policy& policy, const std::string& tenant,
                          const std::string& priority_class, const JobRequest& request);

}  // namespace baton::sched
