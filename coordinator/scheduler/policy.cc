#include "coordinator/scheduler/policy.h"

#include <algorithm>
#include <string>

namespace baton::sched {
namespace {

absl::Status Over(const std::string& what, uint64_t asked, uint64_t limit,
                  const std::string& unit) {
  return absl::InvalidArgumentError(what + " is " + std::to_string(asked) + unit +
                                    ", over the policy's limit of " + std::to_string(limit) + unit);
}

}  // namespace

const PriorityClass* Policy::Find(std::string_view name) const {
  for (const auto& c : classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const TenantPolicy& Policy::Tenant(std::string_view name) const {
  for (const auto& t : tenants) {
    if (t.name == name) return t;
  }
  return default_tenant;
}

int64_t CooldownMs(const PriorityClass& cls, uint32_t evictions) {
  if (evictions == 0) return 0;
  int64_t cap = cls.cooldown_cap_s * 1000;
  int64_t ms = cls.cooldown_base_s * 1000;
  for (uint32_t i = 1; i < evictions && ms < cap; ++i) ms *= 2;
  return std::min(ms, cap);
}

absl::Status CheckJobLimits(const JobLimits& l, const JobRequest& r) {
  uint32_t ranks = std::max<uint32_t>(r.ranks_per_node, 1);
  uint64_t job_gpus = uint64_t{r.gpus_per_node} * r.nodes;
  if (l.max_nodes && r.nodes > l.max_nodes) return Over("nodes", r.nodes, l.max_nodes, "");
  if (l.max_gpus_per_node && r.gpus_per_node > l.max_gpus_per_node) {
    return Over("gpus per node", r.gpus_per_node, l.max_gpus_per_node, "");
  }
  if (l.max_gpus_per_job && job_gpus > l.max_gpus_per_job) {
    return Over("GPUs per job", job_gpus, l.max_gpus_per_job, "");
  }
  if (l.max_cpu_millis_per_node && r.cpu_millis_per_node > l.max_cpu_millis_per_node) {
    return Over("CPU per node", r.cpu_millis_per_node, l.max_cpu_millis_per_node, "m");
  }
  if (l.max_memory_bytes_per_node && r.memory_bytes_per_node > l.max_memory_bytes_per_node) {
    return Over("memory per node", r.memory_bytes_per_node, l.max_memory_bytes_per_node, " bytes");
  }
  if (r.cpu_millis_per_node / ranks < l.min_cpu_millis_per_rank) {
    return absl::InvalidArgumentError("CPU per rank is under the policy's minimum of " +
                                      std::to_string(l.min_cpu_millis_per_rank) + "m");
  }
  if (r.memory_bytes_per_node / ranks < l.min_memory_bytes_per_rank) {
    return absl::InvalidArgumentError("memory per rank is under the policy's minimum of " +
                                      std::to_string(l.min_memory_bytes_per_rank) + " bytes");
  }
  return absl::OkStatus();
}

}  // namespace baton::sched
