// Builders for the scheduler tests: nodes with NUMA and GPUs (whole or MIG), jobs,
// running gangs, and a policy with short, test-friendly timings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched::testing {

constexpr uint64_t kGi = 1ull << 30;
// The single-pass tests' "now".
constexpr Time kNow = 10'000'000;

struct NodeSpec {
  uint32_t gpus = 8;
  uint32_t numa = 2;    // GPUs, cores and memory split evenly over them
  uint32_t cores = 64;  // logical CPUs
  uint32_t smt = 1;     // CPUs per physical core; siblings numbered as Linux does (c, c + P)
  uint64_t memory = 512 * kGi;
  std::string pool;
  std::vector<Taint> taints;
  std::map<std::string, std::string> labels;
  std::string model = "NVIDIA H200";
};

// GPU uuids are "<name>-g<i>"; NUMA node k holds GPUs [k*gpus/numa, (k+1)*gpus/numa).
NodeInfo MakeNode(const std::string& name, const NodeSpec& spec = {});
// A node whose `physical` GPUs are each cut into `slices` MIG slices of `profile`
// (uuids "<name>-p<p>-s<s>", parents "<name>-p<p>"), all on NUMA node 0.
NodeInfo MakeMigNode(const std::string& name, uint32_t physical, uint32_t slices,
                     const std::string& profile = "1g.18gb");

struct JobSpec {
  uint32_t nodes = 1;
  uint32_t gpus = 1;    // per node
  uint32_t ranks = 0;   // 0: one per GPU (or 1 for CPU-only jobs)
  uint64_t cpu = 0;     // 0: 4 cores per GPU (1 core for CPU-only jobs)
  uint64_t memory = 0;  // 0: 32Gi per GPU (4Gi for CPU-only jobs)
  std::string mig;
  bool mpi = false;
  std::string pool;
  std::vector<Toleration> tolerations;
  std::map<std::string, std::string> selector;
  Time submitted = 0;
  TopologyRequest topology;
};

PendingJob MakeJob(JobId id, const std::string& tenant, const std::string& cls,
                   const JobSpec& spec = {});
JobRequest MakeRequest(const JobSpec& spec);

// A gang holding `gpus` (entries of the node, by index) and the job's per-node CPU and
// memory on each named node; ranks bound to the NUMA node of their first GPU.
RunningGang MakeGang(JobId id, const std::string& tenant, const std::string& cls,
                     const ClusterView& view, const std::vector<std::string>& nodes,
                     const std::vector<uint32_t>& gpus, Time started, Time checkpoint = 0);

// The default classes with test timings (min runtime 60 s, cooldown 30 s doubling to
// 8 min) and no tenants.
Policy TestPolicy();
TenantPolicy Tenant(const std::string& name, double weight, uint32_t nominal_gpus,
                    uint32_t lending_gpus = 1'000'000, uint32_t borrowing_gpus = 1'000'000);

const JobOutcome& OutcomeOf(const Decisions& d, JobId job);
const Placement* PlacementOf(const Decisions& d, JobId job);
std::vector<JobId> Victims(const Decisions& d);
// Node names of a placement, node rank order.
std::vector<std::string> NodesOf(const ClusterView& view, const Placement& p);

}  // namespace baton::sched::testing
