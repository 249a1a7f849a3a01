#include "coordinator/scheduler/policy.h"

#include <algorithm>
#include <string>

#include "common/resources.h"

namespace baton::sched {
namespace {

absl::Status Over(const std::string& what, uint64_t asked, uint64_t limit,
                  const std::string& unit) {
  return absl::InvalidArgumentError(what + " is " + std::to_string(asked) + unit +
                                    ", over the policy's limit of " + std::to_string(limit) + unit);
}

// "8 GPU(s), 32 CPUs, 256Gi"; unlimited fields say so.
std::string Quantity(const Resources& r) {
  auto part = [](bool unlimited, const std::string& text) {
    return unlimited ? std::string("unlimited") : text;
  };
  return part(r.gpus == kUnlimited.gpus, std::to_string(r.gpus) + " GPU(s)") + ", " +
         part(r.cpu_millis == kUnlimited.cpu_millis, FormatCpuMillis(r.cpu_millis) + " CPUs") +
         ", " + part(r.memory_bytes == kUnlimited.memory_bytes, FormatBytes(r.memory_bytes));
}

bool Within(const Resources& ask, const Resources& nominal, const Resources& extra) {
  auto fits = [](uint64_t a, uint64_t n, uint64_t e, uint64_t unlimited) {
    return n == unlimited || e == unlimited || a <= n + e;
  };
  return fits(ask.gpus, nominal.gpus, extra.gpus, kUnlimited.gpus) &&
         fits(ask.cpu_millis, nominal.cpu_millis, extra.cpu_millis, kUnlimited.cpu_millis) &&
         fits(ask.memory_bytes, nominal.memory_bytes, extra.memory_bytes, kUnlimited.memory_bytes);
}

absl::Status CheckQuota(const Policy& policy, const std::string& tenant, const PriorityClass& cls,
                        const JobRequest& r) {
  const TenantPolicy& t = policy.Tenant(tenant);
  if (!t.nominal) return absl::OkStatus();
  Resources ask{r.cpu_millis_per_node * r.nodes, r.memory_bytes_per_node * r.nodes,
                r.gpus_per_node * r.nodes};
  Resources extra = cls.preemptible ? t.borrowing_limit : Resources{};
  if (Within(ask, *t.nominal, extra)) return absl::OkStatus();
  return absl::InvalidArgumentError("asks " + Quantity(ask) + ", more than tenant " + tenant +
                                    " may ever use (nominal " + Quantity(*t.nominal) +
                                    (cls.preemptible
                                         ? ", borrowing limit " + Quantity(t.borrowing_limit)
                                         : "; class " + cls.name + " never borrows") +
                                    ")");
}

}  // namespace

const PriorityClass* Policy::Find(std::string_view name) const {
  for (const auto& c : classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string Policy::ShareUser(std::string_view cls) const {
  const PriorityClass* c = Find(cls);
  return c != nullptr && c->gpu_sharing == "mps" ? c->mps_user : "";
}

const TenantPolicy& Policy::Tenant(std::string_view name) const {
  for (const auto& t : tenants) {
    if (t.name == name) return t;
  }
  return default_tenant;
}

int64_t CooldownMs(const PriorityClass& cls, uint32_t evictions) {
  return absl::ToInt64Milliseconds(DoublingBackoff(absl::Seconds(cls.cooldown_base_s),
                                                   absl::Seconds(cls.cooldown_cap_s), evictions));
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

namespace baton::sched {

const TopologyRequest& EffectiveTopology(const PriorityClass& cls, const JobRequest& request) {
  return request.topology.level.empty() ? cls.topology : request.topology;
}

int32_t TopologyLevelIndex(const Policy& policy, std::string_view name) {
  for (size_t i = 0; i < policy.topology_levels.size(); ++i) {
    if (policy.topology_levels[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

absl::Status CheckRequest(const Policy& policy, const std::string& tenant,
                          const std::string& priority_class, const JobRequest& r) {
  const PriorityClass* cls = policy.Find(priority_class);
  if (!cls) return absl::InvalidArgumentError("unknown priority class '" + priority_class + "'");
  if (absl::Status s = CheckJobLimits(policy.job_limits, r); !s.ok()) return s;
  if (const std::string& level = r.topology.level;
      !level.empty() && TopologyLevelIndex(policy, level) < 0) {
    std::string known;
    for (const TopologyLevel& l : policy.topology_levels)
      known += (known.empty() ? "" : ", ") + l.name;
    return absl::InvalidArgumentError(
        "topology level '" + level + "' is not one of the policy's topology.levels (" +
        (known.empty() ? "none: this cluster has no topology" : known) + ")");
  }
  const std::string& pool = r.pool.empty() ? policy.default_pool : r.pool;
  for (const PoolPolicy& p : policy.pools) {
    if (p.name == pool && !p.classes.empty() &&
        std::find(p.classes.begin(), p.classes.end(), cls->name) == p.classes.end()) {
      return absl::InvalidArgumentError("class " + cls->name + " may not run in pool " + pool);
    }
  }
  // MIG slices are inference's: a training job on one shares a physical GPU's memory
  // bandwidth and power with whatever holds its other slices, in either launch mode.
  if (!r.mig_profile.empty() && !cls->service) {
    return absl::InvalidArgumentError(
        "MIG slices are for inference classes; class " + cls->name +
        " is training and never runs on a MIG slice (mpi or direct mode); ask for whole GPUs");
  }
  if (r.gpu_share_percent > 0 && cls->gpu_sharing != "mps") {
    return absl::InvalidArgumentError(
        "class " + cls->name + " may not share a GPU (its policy has no gpu_sharing: mps" +
        (cls->service ? "" : "; training never shares one") + "); ask for whole GPUs");
  }
  if (r.gpu_share_percent > 0 && r.mpi) {
    return absl::InvalidArgumentError("a GPU share is never used for NCCL (mpi) training");
  }
  if (!r.mig_profile.empty() && r.mpi) {
    return absl::InvalidArgumentError(
        "MIG slices are never used for NCCL (mpi) training; ask for whole GPUs");
  }
  if (!r.mig_profile.empty() && r.ranks_per_node != r.gpus_per_node) {
    return absl::InvalidArgumentError(
        "a MIG job runs one rank per slice: ranks_per_node (" + std::to_string(r.ranks_per_node) +
        ") must equal gpus_per_node (" + std::to_string(r.gpus_per_node) + ")");
  }
  return CheckQuota(policy, tenant, *cls, r);
}

}  // namespace baton::sched
