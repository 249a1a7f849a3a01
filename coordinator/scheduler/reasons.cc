#include "coordinator/scheduler/reasons.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/resources.h"
#include "coordinator/scheduler/fit.h"
#include "coordinator/scheduler/placement.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched::internal {
namespace {

constexpr char kDeferred[] = "; preemption deferred: this pass spent its search budget";

std::string Describe(const Pass& pass, const Shape& s, const JobRequest& r) {
  std::string out = std::to_string(s.nodes) + " node(s) with ";
  if (s.gpus) {
    if (r.gpu_share_percent > 0) {
      out += "a " + std::to_string(r.gpu_share_percent) + "% share with " +
             FormatBytes(r.gpu_memory_bytes) +
             " of a GPU offered as an MPS pool (a pool holds shares of one user at a time: the"
             " owner, or the MPS service user the class names)";
    } else {
      out += std::to_string(s.gpus) +
             (s.profile >= 0 ? " MIG " + pass.profiles[s.profile] + " slice(s)" : " GPU(s)");
    }
    if (!r.gpu_model.empty()) out += " (" + r.gpu_model + ")";
    out += ", ";
  }
  out += FormatCpuMillis(s.cpu) + " CPUs and " + FormatBytes(s.mem) + " memory in pool " +
         NormalPool(pass, r.pool);
  if (!r.selector.empty()) out += " (with a node selector)";
  return out;
}

// Where a required gang's level has the most room now, counted as nodes with the gang's
// GPUs free (as placement ranks domains): "largest free: 5 node(s) in leaf-3".
std::string LargestFree(Pass& pass, const Shape& s) {
  const TopoLevel& level = pass.topo[s.topo_level];
  std::vector<uint32_t> free(level.names.size(), 0);
  for (uint32_t g : EligibleGroups(pass, s.filter)) {
    uint32_t d = level.group_domain[g];
    if (d == kNone) continue;
    for (uint32_t node : pass.groups[g].nodes) {  // free: the gang's GPUs are free there
      if (!pass.hw[node].schedulable) continue;
      if (std::popcount(KindMask(pass, node, pass.free[node], s)) >= static_cast<int>(s.gpus)) {
        ++free[d];
      }
    }
  }
  auto most = std::max_element(free.begin(), free.end());
  if (most == free.end() || *most == 0) {
    return "no " + pass.policy.topology_levels[s.topo_level].name + " has a free node for it";
  }
  return "largest free: " + std::to_string(*most) + " node(s) in " +
         level.names[static_cast<size_t>(most - free.begin())];
}

// Amount::gpus (hundredths) as a person reads it: "3 GPU(s)", "1.25 GPU(s)".
std::string GpuCount(uint64_t units) {
  std::string out = std::to_string(units / kGpuUnits);
  if (uint64_t rest = units % kGpuUnits) {
    out += '.' + std::to_string(rest / 10);
    if (rest % 10) out += std::to_string(rest % 10);
  }
  return out + " GPU(s)";
}

std::string Quantity(const Amount& a) {
  auto one = [](uint64_t v, const std::string& s) { return v >= kInf ? "unlimited" : s; };
  return one(a.gpus, GpuCount(a.gpus)) + ", " + one(a.millis, FormatCpuMillis(a.millis)) +
         " CPUs, " + one(a.mem, FormatBytes(a.mem));
}

// Infeasibility depends only on the shape, the class and the tenant (memoized below):
// the policy's rules, then whether enough nodes could ever hold the gang.
std::string Uncached(Pass& pass, const Job& job) {
  const JobRequest& r = job.src->request;
  absl::Status policy =
      CheckRequest(pass.policy, pass.tenant_names[job.tenant], pass.classes[job.cls]->name, r);
  if (!policy.ok()) return std::string(policy.message());
  if (pass.shape_feasible.empty()) pass.shape_feasible.assign(pass.shapes.size(), -1);
  const Shape& s = pass.shapes[job.shape];
  int64_t& feasible = pass.shape_feasible[s.id];
  if (feasible < 0) feasible = static_cast<int64_t>(FeasibleNodes(pass, s));
  if (feasible < s.nodes) {
    return "needs " + Describe(pass, s, r) + "; the cluster has " + std::to_string(feasible) +
           " such node(s)";
  }
  if (s.topo_level >= 0 && s.topo_required && !s.topo_relaxes) {
    uint32_t largest = LargestDomain(pass, s);
    const std::string& level = pass.policy.topology_levels[s.topo_level].name;
    if (largest < s.nodes) {
      return "needs " + Describe(pass, s, r) + " under one " + level + "; the largest " + level +
             " has " + std::to_string(largest) + " such node(s)";
    }
  }
  return "";
}

}  // namespace

const Reason& InfeasibleReason(Pass& pass, const Job& job) {
  if (pass.infeasible.size() <= job.shape) pass.infeasible.resize(pass.shapes.size());
  auto [it, added] = pass.infeasible[job.shape].try_emplace(uint64_t{job.cls} << 32 | job.tenant);
  if (added) {
    std::string why = Uncached(pass, job);
    if (!why.empty()) it->second = Reason(std::move(why));
  }
  return it->second;
}

std::string CooldownReason(const Pass& pass, const Job& job) {
  // One string built in place: a queue holds thousands of jobs in cooldown.
  std::string out;
  out.reserve(64);
  absl::StrAppend(&out, "cooling down after ", job.src->evictions,
                  " eviction(s): ", FormatDurationMs(job.src->cooldown_until - pass.now), " left");
  return out;
}

// The text names the tenant's use, which changes only when it gets room: one text per
// tenant and verdict until then.
Reason QuotaReason(Pass& pass, const Job& job, QuotaBook::Verdict verdict) {
  if (pass.quota_text.empty()) pass.quota_text.resize(pass.tenant_names.size());
  Pass::QuotaText& cached = pass.quota_text[job.tenant];
  const Amount& use = pass.quota.Use(job.tenant);
  bool same = cached.verdict == static_cast<int>(verdict) && cached.use.gpus == use.gpus &&
              cached.use.millis == use.millis && cached.use.mem == use.mem;
  if (same && verdict != QuotaBook::Verdict::kClassNoBorrow) return cached.text;
  const TenantQuota& q = pass.quota.Quota(job.tenant);
  std::string text = "tenant " + pass.tenant_names[job.tenant] + " uses " + Quantity(use) +
                     " of its nominal " + Quantity(q.nominal);
  switch (verdict) {
    case QuotaBook::Verdict::kClassNoBorrow:
      return text + "; this job would go over it and class " + pass.classes[job.cls]->name +
             " never borrows";
    case QuotaBook::Verdict::kOverBorrowLimit:
      text += "; this job would go past its borrowing limit of " + Quantity(q.borrowing_limit);
      break;
    default:
      text += "; this job would borrow, and other tenants lend no more right now";
  }
  cached = Pass::QuotaText{static_cast<int>(verdict), use, Reason(std::move(text))};
  return cached.text;
}

std::string PlacedReason(const Pass& pass, const Job& job, const Placement& placement) {
  std::string out = "placed on " + std::to_string(placement.nodes.size()) + " node(s)";
  const Shape& s = pass.shapes[job.shape];
  if (s.topo_level < 0) return out;
  const std::string& level = pass.policy.topology_levels[s.topo_level].name;
  out += " in " + std::to_string(placement.topology_domains.size()) + " " + level +
         "(s): " + absl::StrJoin(placement.topology_domains, ", ");
  if (placement.topology_domains.size() > placement.topology_min_domains) {
    out += " (" + std::to_string(placement.topology_min_domains) + " at best: the " + level +
           "(s) that could hold it are busy)";
  }
  return out;
}

std::string AwaitingReason(uint32_t victims_leaving) {
  return "waiting for " + std::to_string(victims_leaving) +
         " evicted job(s) to exit; their room is held for it";
}

std::string PreemptingReason(const std::vector<Eviction>& evictions, JobId preemptor) {
  std::string ids;
  for (const Eviction& e : evictions) {
    if (e.preemptor == preemptor) ids += (ids.empty() ? "" : ", ") + std::to_string(e.victim);
  }
  return "evicting job(s) " + ids + " to make room; the room is held for it";
}

std::string HeadOfLineReason(Pass& pass, const Job& job, const Reservation& r,
                             bool preemption_deferred) {
  std::string out = "first in line for " + std::to_string(r.nodes.size()) + " node(s) in pool " +
                    NormalPool(pass, job.src->request.pool) +
                    ": they are held so smaller jobs cannot delay it";
  const Shape& s = pass.shapes[job.shape];
  if (s.topo_level >= 0 && s.topo_required && !r.nodes.empty()) {
    const std::string& level = pass.policy.topology_levels[s.topo_level].name;
    out += "; it needs one " + level + " (" + DomainNames(pass, s, {r.nodes[0]})[0] +
           " is held); " + LargestFree(pass, s);
  }
  if (s.share) out += "; it needs " + Describe(pass, s, job.src->request) + " free";
  return out + (preemption_deferred ? kDeferred : "");
}

Reason CapacityReason(Pass& pass, const Job& job, bool preemption_deferred) {
  if (pass.shape_wait.empty()) pass.shape_wait.resize(pass.shapes.size());
  Reason& cached = pass.shape_wait[job.shape];
  if (cached.empty()) {
    const Shape& s = pass.shapes[job.shape];
    std::string text = "waiting for capacity: " + Describe(pass, s, job.src->request) + " free";
    if (s.topo_level >= 0 && s.topo_required) {
      text += " under one " + pass.policy.topology_levels[s.topo_level].name + "; " +
              LargestFree(pass, s);
    }
    cached = Reason(std::move(text));
  }
  return preemption_deferred ? Reason(cached.str() + kDeferred) : cached;
}

Eviction MakeEviction(const Pass& pass, const Gang& victim, const Job& preemptor,
                      EvictionReason reason) {
  Eviction e;
  e.victim = victim.src->id;
  e.preemptor = preemptor.src->id;
  e.reason = reason;
  e.lost_gpu_seconds = victim.lost;
  e.cooldown_ms = CooldownMs(*pass.classes[victim.cls], victim.src->evictions + 1);
  const std::string& cls = pass.classes[preemptor.cls]->name;
  const std::string& tenant = pass.tenant_names[preemptor.tenant];
  e.message =
      reason == EvictionReason::kHigherClass
          ? "preempted by job " + std::to_string(e.preemptor) + " (class " + cls + ")"
          : "quota reclaimed by tenant " + tenant + " for job " + std::to_string(e.preemptor);
  return e;
}

}  // namespace baton::sched::internal
