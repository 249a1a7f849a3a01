// `baton capacity`'s arithmetic (docs/capacity.md): from the inference services (weights,
// peak KV cache, peak QPS, QPS one GPU sustains at the target P99, HA replicas) and a
// training plan (GPU-days and deadline per project, guarantee rate) it sizes the
// inference pool (whole GPUs, or MIG slices / MPS shares where an instance fits one),
// the shared training pool, each tenant's nominal quota and lending limit, following the
// source article's rules: an instance is weights + peak KV cache; reserve compute for
// 70% of peak QPS; a pool guaranteed >= 90% lends at most ~30%. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace baton::cli {

struct MigProfile {
  std::string name;       // "3g.71gb"
  double memory_gib = 0;  // what an instance may use
  uint32_t compute = 0;   // sevenths of the GPU's compute
  uint32_t per_gpu = 0;   // how many fit one GPU
};

struct GpuType {
  std::string name;
  double memory_gib = 0;
  std::vector<MigProfile> mig;  // smallest first; empty: no MIG
};

// The GPU types known by name (H200, H100-80GB, A100-80GB, A100-40GB, L40S); NotFound.
absl::StatusOr<GpuType> KnownGpu(const std::string& name);

struct Service {
  std::string name;
  double weights_gib = 0;
  double peak_kv_cache_gib = 0;
  double peak_qps = 0;
  double qps_per_gpu = 0;        // one whole GPU at the target P99
  uint32_t replicas = 1;         // the fewest instances, for HA
  std::string sharing = "auto";  // auto (MIG where a slice fits), mig, mps, none
};

struct Project {
  std::string name;
  double gpu_days = 0;
  double deadline_days = 0;
  double weight = 0;  // 0: its nominal quota
};

struct CapacityInput {
  GpuType gpu;
  uint32_t gpus_per_node = 8;
  double reserve_fraction = 0.7;  // of peak compute (the article's 70%)
  double overhead_gib = 0;        // framework memory per instance, on top
  std::vector<Service> services;
  double guarantee = 0.9;  // share of the time the training pool must be there
  std::vector<Project> projects;
  uint32_t budget_gpus = 0;  // 0: no budget to check against
};

// Each file's sections (docs/capacity.md); either may be empty. InvalidArgument naming
// the file and field of the first inconsistency.
absl::StatusOr<CapacityInput> ParseCapacityInput(const std::string& services_yaml,
                                                 const std::string& services_source,
                                                 const std::string& plan_yaml,
                                                 const std::string& plan_source);

struct ServicePlan {
  std::string name;
  double instance_gib = 0;      // weights + KV cache + overhead
  std::string unit;             // "1 x H200", "2 x H100-80GB", "MIG 3g.40gb", "MPS 1/2 H200"
  double unit_memory_gib = 0;   // what one instance gets
  double unit_compute = 0;      // GPUs of compute one instance gets
  double peak_compute = 0;      // GPUs of compute at peak QPS
  double reserved_compute = 0;  // reserve_fraction of it
  uint32_t instances = 0;
  uint32_t gpus = 0;  // physical GPUs
  // An MPS unit: what each instance asks at submit (--gpu-share, --gpu-mem), as the
  // scheduler counts a pool (100 units and the GPU's memory in MiB): k instances to a GPU
  // take floor(100 / k)% and floor(MiB / k) each. 0 for other units.
  uint32_t gpu_share_percent = 0;
  uint64_t gpu_memory_mib = 0;
};

struct ProjectPlan {
  std::string name;
  double average_gpus = 0;  // gpu_days / deadline_days
  uint32_t nominal = 0;     // average / guarantee, rounded up
  uint32_t lending_limit = 0;
  double weight = 0;
};

struct CapacityPlan {
  std::vector<ServicePlan> services;
  uint32_t inference_gpus = 0, inference_nodes = 0;
  // GPUs of each inference node offered as MPS pools (the agent's --mps-gpus), enough for
  // the MPS units with the rest of each node's GPUs whole for the other services.
  uint32_t mps_gpus_per_node = 0;
  std::vector<ProjectPlan> projects;
  double lend_fraction = 0;                        // 3 x (1 - guarantee), within [0, 1]: 90% -> 30%
  uint32_t training_gpus = 0, training_nodes = 0;  // the shared pool, whole nodes
  uint32_t total_gpus = 0;
};

// InvalidArgument naming the field when the inputs cannot be met (an instance larger than
// a node, a budget below the plan).
absl::StatusOr<CapacityPlan> PlanCapacity(const CapacityInput& input);

std::string PlanTable(const CapacityInput& input, const CapacityPlan& plan);
// The tenants and pools as the coordinator's policy YAML (policy_config.h parses it).
std::string PlanPolicyYaml(const CapacityInput& input, const CapacityPlan& plan);
// A baton-sim cluster file of the two pools.
std::string PlanClusterYaml(const CapacityInput& input, const CapacityPlan& plan);

// One rule of thumb against a simulation of the plan.
struct RuleCheck {
  std::string rule;  // "inference pool (weights + KV cache, 70% of peak)"
  bool held = false;
  std::string detail;  // the figures it was judged on
};

// Judges the article's rules on baton-sim's JSON summary (coordinator/sim/report.h) of a
// trace replayed on PlanClusterYaml under PlanPolicyYaml: services placed without
// waiting; every project's gangs gathered (none waiting for good) within the deadline
// horizon; evictions of borrowers costing under 5% of the GPU time used.
std::vector<RuleCheck> CheckPlan(const CapacityInput& input, const CapacityPlan& plan,
                                 const nlohmann::json& summary);
std::string CheckTable(const std::vector<RuleCheck>& checks);

}  // namespace baton::cli
