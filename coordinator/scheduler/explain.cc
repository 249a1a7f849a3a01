#include "coordinator/scheduler/explain.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_join.h"
#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler/pass_state.h"
#include "coordinator/scheduler/plan.h"
#include "coordinator/scheduler/preemption.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched {
namespace {

void FillFromDecisions(const ClusterView& view, const Decisions& d, Explanation& e) {
  std::map<JobId, const PendingJob*> pending;
  for (const auto& p : view.pending) pending[p.id] = &p;
  const std::string& cls = pending.at(e.job)->priority_class;
  e.queue_length = static_cast<uint32_t>(d.outcomes.size());
  for (const JobOutcome& o : d.outcomes) {
    if (o.job == e.job) {
      e.outcome = o.outcome;
      e.reason = o.reason;
      e.position = o.position;
      break;
    }
    if (pending.at(o.job)->priority_class == cls) ++e.ahead_in_class;
  }
  for (const Eviction& ev : d.evictions) {
    if (ev.preemptor == e.job) e.evictions.push_back(ev);
  }
  for (const Reservation& r : d.reservations) {
    if (r.job == e.job) e.reservation = r;
  }
  for (const Placement& p : d.placements) {
    if (p.job == e.job) e.placement = p;
  }
}

// A topology-bound job waiting for room: the cheapest domain of its level to free and
// whom that takes ("evicting 2 job(s) (12, 15) would free leaf-7"), by the victim search
// run over the view as it is, with every running gang of a preemptible class counted
// whatever the pass's rules let this job evict (the pass's own search already ran and
// found nothing it may take). "" when the job asks for no domain or nothing would free one.
std::string WhatWouldFree(const ClusterView& view, const Policy& policy, Time now, JobId job) {
  internal::Pass pass(view, policy, now);
  internal::BuildPass(pass);
  auto it = std::find_if(pass.jobs.begin(), pass.jobs.end(),
                         [&](const internal::Job& j) { return j.id == job; });
  if (it == pass.jobs.end() || it->cls == internal::kNone) return "";
  internal::Shape& s = pass.shapes[it->shape];
  if (s.topo_level < 0) return "";
  s.topo_required = true;  // one domain freed, never victims scattered over several
  internal::PreemptionPlan plan;
  if (!internal::FindVictims(pass, {.job = &*it, .hypothetical = true}, &plan) ||
      plan.victims.empty()) {
    return "";
  }
  std::vector<JobId> ids;
  for (const internal::Victim& v : plan.victims) ids.push_back(pass.gangs[v.gang].src->id);
  return "evicting " + std::to_string(ids.size()) + " job(s) (" + absl::StrJoin(ids, ", ") +
         ") would free " + absl::StrJoin(internal::DomainNames(pass, s, plan.nodes), ", ");
}

}  // namespace

Explanation Explain(const ClusterView& view, const Policy& policy, Time now, JobId job) {
  Explanation e;
  e.job = job;
  e.running = std::any_of(view.running.begin(), view.running.end(),
                          [&](const RunningGang& g) { return g.id == job; });
  e.pending = std::any_of(view.pending.begin(), view.pending.end(),
                          [&](const PendingJob& p) { return p.id == job; });
  if (!e.pending) return e;
  FillFromDecisions(view, Plan(view, policy, now), e);
  // Waiting for room, or holding room as the head of the line (a planned preemption's
  // reason already names the domain it frees).
  bool head = e.outcome == Outcome::kReserved && e.reservation &&
              e.reservation->kind == Reservation::Kind::kHeadOfLine;
  if (e.outcome == Outcome::kWaitForCapacity || head) {
    if (std::string frees = WhatWouldFree(view, policy, now, job); !frees.empty()) {
      e.reason += "; " + frees;
    }
  }
  return e;
}

std::string Explanation::Text(const ClusterView& view) const {
  std::string id = "job " + std::to_string(job);
  if (!pending) return id + (running ? " is running" : " is not pending");
  std::string out = id + ": " + std::string(OutcomeName(outcome)) + " — " + reason + "\n";
  out += "place in line: " + std::to_string(position) + " of " + std::to_string(queue_length) +
         " (" + std::to_string(ahead_in_class) + " ahead of it in its class)\n";
  for (const Eviction& ev : evictions) {
    out += "evicts job " + std::to_string(ev.victim) + ": " +
           std::string(EvictionReasonText(ev.reason)) + ", loses " +
           std::to_string(static_cast<uint64_t>(ev.lost_gpu_seconds)) + " GPU-seconds\n";
  }
  if (reservation) {
    out += "holds node(s):";
    for (uint32_t n : reservation->nodes) out += " " + view.nodes[n].name;
    out += "\n";
  }
  if (placement) {
    out += "starts on:";
    for (const NodePlacement& n : placement->nodes) out += " " + view.nodes[n.node].name;
    out += "\n";
  }
  return out;
}

std::vector<TenantShare> Shares(const ClusterView& view, const Policy& policy) {
  std::map<std::string, TenantShare> by_name;
  auto get = [&](const std::string& name) -> TenantShare& {
    TenantShare& s = by_name[name];
    s.tenant = name;
    return s;
  };
  for (const TenantPolicy& t : policy.tenants) get(t.name);
  for (const auto& [name, usage] : view.usage) get(name).usage_gpu_seconds = usage;
  for (const RunningGang& g : view.running) {
    for (const HeldNode& h : g.nodes) {
      get(g.tenant).running_gpus += HeldGpus(h);
    }
  }
  for (const PendingJob& p : view.pending) {
    get(p.tenant).pending_gpus += p.request.gpu_share_percent > 0
                                      ? p.request.gpu_share_percent / 100.0
                                      : p.request.gpus_per_node * p.request.nodes;
  }
  double usage = 0, weights = 0;
  for (auto& [name, s] : by_name) {
    const TenantPolicy& t = policy.Tenant(name);
    s.weight = t.weight;
    s.nominal = t.nominal;
    usage += s.usage_gpu_seconds;
    weights += s.weight;
  }
  std::vector<TenantShare> out;
  for (auto& [name, s] : by_name) {
    s.usage_share = usage > 0 ? s.usage_gpu_seconds / usage : 0;
    s.weight_share = weights > 0 ? s.weight / weights : 0;
    out.push_back(s);
  }
  return out;
}

}  // namespace baton::sched
