// Per-class CPU and memory limits for the attempts on one node (docs/isolation.md,
// "Workload kinds"): inference holds exclusive whole cores (all SMT siblings), near its
// GPUs' NUMA node, with a quota of exactly those cores and memory = request + headroom;
// training shares the cores no inference job holds, bursting up to all of them (quota
// ceiling = those cores), weighted by its request, memory = request. Inference takes the
// cores the scheduler charged when the launch names them and they are free here, else
// picks its own (older coordinators, a stale placement: logged). Inference cores stay
// put for the attempt's life; training plans follow every arrival and departure (narrowed,
// widened). Pure bookkeeping, no OS calls; thread-compatible (the Isolator serialises).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/cgroup_driver.h"
#include "proto/api.pb.h"

namespace baton {

// {0,1,2,5} -> "0-2,5".
std::string FormatCpuList(const std::vector<uint32_t>& cpus);

struct ClassOptions {
  uint32_t inference_memory_headroom_percent = 20;  // memory limit = request * (1 + this)
  uint32_t weight_per_core = 100;  // cgroup v2 weight per requested core (v1 shares follow)
  uint32_t min_shared_cpus = 1;    // CPUs inference may never take from everyone else
  bool training_may_burst = true;  // false: training's quota is its request, not the idle cores
};

struct CpuDemand {
  bool inference = false;
  uint64_t cpu_millis = 0;
  uint64_t memory_bytes = 0;
  std::set<int32_t> numa_nodes;  // of the attempt's GPUs; empty: no preference
  std::vector<uint32_t> cpus;    // inference: the cores the scheduler charged; empty: pick
};

struct CpuPlan {
  CgroupLimits limits;
  std::vector<uint32_t> cpus;  // limits.cpus and limits.mems, as lists
  std::vector<uint32_t> mems;
  bool exclusive = false;
  uint32_t narrowed_cpus = 0;  // CPUs inference jobs hold that this training job may not use
};

class CpuPlanner {
 public:
  CpuPlanner(const v1::Inventory& inventory, ClassOptions options);

  // Registers an attempt; inference gets its cores here: the demand's charged ones when
  // each is a CPU of the node, they are whole cores (every SMT sibling), held by no other
  // inference attempt, and leave min_shared_cpus to everyone else; else (logged) its own
  // pick, whole cores too. ResourceExhausted when
  // too few whole cores are free. Idempotent for a name already there.
  absl::Status Add(const std::string& name, const CpuDemand& demand);
  void Remove(const std::string& name);
  bool Has(const std::string& name) const { return demands_.count(name) > 0; }
  // The limits of one attempt under the current set of attempts.
  CpuPlan PlanFor(const std::string& name) const;
  // Every training attempt (whose plan moves when inference comes or goes).
  std::vector<std::string> TrainingAttempts() const;
  // CPUs inference holds now, as a cpuset list ("" when none).
  std::string ExclusiveCpus() const { return FormatCpuList(ExclusiveCpuSet()); }
  std::vector<uint32_t> ExclusiveCpuSet() const;
  // The node's CPUs that no inference attempt holds, ascending.
  std::vector<uint32_t> SharedCpus() const;

 private:
  struct Core {
    std::vector<uint32_t> cpus;
    int32_t numa = -1;
  };
  std::set<uint32_t> TakenCpus() const;
  // Why the scheduler's charged CPUs cannot be taken ("" when they can).
  std::string CheckCharged(const std::vector<uint32_t>& cpus) const;
  std::vector<uint32_t> MemsOf(const std::vector<uint32_t>& cpus) const;  // ascending

  std::vector<Core> cores_;
  std::map<uint32_t, size_t> core_of_;  // CPU -> its core in cores_
  std::map<uint32_t, int32_t> numa_of_;
  const ClassOptions options_;
  std::map<std::string, CpuDemand> demands_;
  std::map<std::string, std::vector<uint32_t>> exclusive_;  // inference attempt -> its CPUs
};

}  // namespace baton
