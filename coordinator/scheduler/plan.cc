#include "coordinator/scheduler/plan.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "coordinator/scheduler/order.h"
#include "coordinator/scheduler/pass_state.h"
#include "coordinator/scheduler/placement.h"
#include "coordinator/scheduler/preemption.h"
#include "coordinator/scheduler/reasons.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched {
namespace internal {
namespace {

struct Verdict {
  Outcome outcome;
  Reason reason;
};

class Planner {
 public:
  Planner(Pass& pass, Decisions& out)
      : pass_(pass), index_(pass), out_(out), place_failed_(pass.shapes.size(), kNever) {}

  void Run();

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  using PreemptKey = std::tuple<uint32_t, uint32_t, uint32_t, bool>;

  void HoldReservations();
  Verdict Decide(const Job& job);
  QuotaBook::Verdict CheckQuota(const Job& job, bool borrows);
  Verdict Admit(const Job& job, bool within);
  Verdict Contend(const Job& job, bool within);
  bool TryPlace(const Job& job);
  bool TryPreempt(const Job& job, bool within);
  bool TryHeadOfLine(const Job& job);
  std::string NumaRuleNote(const Job& job);
  void Reserve(const Job& job, const std::vector<uint32_t>& nodes, Reservation::Kind kind);
  void ReleaseHeld(JobId id);
  int32_t ClassValue(const Job& job) const { return pass_.classes[job.cls]->value; }

  Pass& pass_;
  NodeIndex index_;
  Decisions& out_;
  std::vector<int64_t> place_failed_;  // per shape: highest class value that found no room
  absl::flat_hash_set<PreemptKey> preempt_failed_;
  // Per (tenant, shape, may borrow): the quota verdict and the book's version it holds
  // for. Most of a big queue waits for quota, tenant by tenant, shape by shape.
  struct QuotaMemo {
    uint64_t version = ~uint64_t{0};
    QuotaBook::Verdict verdict = QuotaBook::Verdict::kWithin;
  };
  absl::flat_hash_map<uint64_t, QuotaMemo> quota_memo_;
  uint32_t searches_ = 0;
  bool deferred_ = false;  // the last preemption search was refused for the budget
  std::set<std::string> head_pools_;
  absl::flat_hash_map<JobId, uint32_t> awaiting_;           // job -> its victims still leaving
  absl::flat_hash_map<JobId, std::vector<uint32_t>> held_;  // reservations from last pass
};

void Planner::Run() {
  OrderQueue(pass_);
  HoldReservations();
  out_.outcomes.reserve(pass_.jobs.size());
  for (uint32_t i = 0; i < pass_.jobs.size(); ++i) {
    const Job& job = pass_.jobs[i];
    Verdict v = Decide(job);
    // Room held for a job that now waits for quota (or cannot run) goes back.
    if (job.holds && v.outcome != Outcome::kReserved) ReleaseHeld(job.id);
    out_.outcomes.push_back(JobOutcome{job.id, v.outcome, i + 1, std::move(v.reason)});
  }
}

// Room already promised: the nodes of last pass's preemption reservations and the nodes
// victims are leaving for their preemptor stay held for it, in queue order.
void Planner::HoldReservations() {
  absl::flat_hash_map<JobId, std::vector<uint32_t>> victim_nodes;
  for (const Gang& g : pass_.gangs) {
    if (!g.evicting || g.src->evicting_for == kNoJob) continue;
    ++awaiting_[g.src->evicting_for];
    auto& nodes = victim_nodes[g.src->evicting_for];
    for (uint32_t h = g.hold_begin; h < g.hold_end; ++h) nodes.push_back(pass_.holds[h].node);
  }
  absl::flat_hash_map<std::string, uint32_t> node_ids;
  for (Job& job : pass_.jobs) {
    if (!job.has_reserved_nodes && !job.awaits_victims) continue;
    if (job.cls == kNone || job.cooldown_until > pass_.now || job.held) continue;
    job.holds = true;
    if (node_ids.empty()) {
      for (uint32_t i = 0; i < pass_.view.nodes.size(); ++i) node_ids[pass_.view.nodes[i].name] = i;
    }
    std::vector<uint32_t> nodes;
    if (job.awaits_victims) nodes = victim_nodes[job.id];
    for (const auto& name : job.src->reserved_nodes) {
      if (auto it = node_ids.find(name); it != node_ids.end()) nodes.push_back(it->second);
    }
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    std::vector<uint32_t>& mine = held_[job.id];
    for (uint32_t node : nodes) {
      if (pass_.reserved[node].job != kNoJob) continue;
      pass_.reserved[node] = NodeReservation{ClassValue(job), job.id};
      pass_.reserved_list.push_back(node);
      mine.push_back(node);
    }
  }
}

Verdict Planner::Decide(const Job& job) {
  const PendingJob& p = *job.src;
  if (job.cls == kNone) {
    return {Outcome::kInfeasible, "unknown priority class '" + p.priority_class + "'"};
  }
  if (const Reason& why = InfeasibleReason(pass_, job); !why.empty()) {
    return {Outcome::kInfeasible, why};
  }
  if (job.held) {
    return p.held.empty() ? Verdict{Outcome::kDependency, p.waits_for}
                          : Verdict{Outcome::kHeld, p.held};
  }
  if (job.cooldown_until > pass_.now) return {Outcome::kInCooldown, CooldownReason(pass_, job)};
  const PriorityClass& cls = *pass_.classes[job.cls];
  QuotaBook::Verdict q = CheckQuota(job, cls.preemptible);
  if (q != QuotaBook::Verdict::kWithin && q != QuotaBook::Verdict::kBorrow) {
    return {Outcome::kWaitForQuota, QuotaReason(pass_, job, q)};
  }
  return Admit(job, q == QuotaBook::Verdict::kWithin);
}

QuotaBook::Verdict Planner::CheckQuota(const Job& job, bool borrows) {
  QuotaMemo& m = quota_memo_[uint64_t{job.tenant} << 33 | uint64_t{job.shape} << 1 | borrows];
  if (m.version != pass_.quota.version()) {
    m.verdict = pass_.quota.Check(job.tenant, Ask(pass_, job), borrows);
    m.version = pass_.quota.version();
  }
  return m.verdict;
}

Verdict Planner::Admit(const Job& job, bool within) {
  JobId id = job.id;
  if (TryPlace(job)) return {Outcome::kPlaced, PlacedReason(pass_, job, out_.placements.back())};
  if (!job.holds) return Contend(job, within);
  if (auto it = awaiting_.find(id); it != awaiting_.end()) {
    pass_.quota.Add(job.tenant, Ask(pass_, job));
    Reservation r{id, Reservation::Kind::kPreemption, held_[id]};
    out_.reservations.push_back(std::move(r));
    return {Outcome::kReserved, AwaitingReason(it->second)};
  }
  ReleaseHeld(id);
  return Contend(job, within);
}

// No room now: make room (preemption), or hold room as the head of the line.
Verdict Planner::Contend(const Job& job, bool within) {
  deferred_ = false;
  if (TryPreempt(job, within)) {
    std::string why = PreemptingReason(out_.evictions, job.id);
    const Shape& s = pass_.shapes[job.shape];
    if (s.topo_level >= 0) {  // where the victims leave room: "… to free leaf-7"
      why += "; it frees " +
             absl::StrJoin(DomainNames(pass_, s, out_.reservations.back().nodes), ", ");
    }
    return {Outcome::kReserved, why};
  }
  if (TryHeadOfLine(job)) {
    return {Outcome::kReserved,
            HeadOfLineReason(pass_, job, out_.reservations.back(), deferred_) + NumaRuleNote(job)};
  }
  Reason why = CapacityReason(pass_, job, deferred_);
  std::string note = NumaRuleNote(job);
  return {Outcome::kWaitForCapacity, note.empty() ? why : Reason(why.str() + note)};
}

// Would the gang fit now without the policy's inference_numa_exclusive? Then the rule is
// what it waits for, and the reason says so.
std::string Planner::NumaRuleNote(const Job& job) {
  const Shape& s = pass_.shapes[job.shape];
  if (!s.numa_exclusive) return "";
  Shape relaxed = s;
  relaxed.numa_exclusive = false;
  if (FindNodes(pass_, index_, relaxed, ClassValue(job), job.id).empty()) return "";
  return s.service ? "; policy inference_numa_exclusive: the free room is on NUMA nodes "
                     "training uses, and inference never shares one with training"
                   : "; policy inference_numa_exclusive: the free room is on NUMA nodes "
                     "serving inference, and training never runs on one";
}

bool Planner::TryPlace(const Job& job) {
  const Shape& s = pass_.shapes[job.shape];
  int32_t value = ClassValue(job);
  bool holds = job.holds && held_.contains(job.id);
  if (!holds && place_failed_[s.id] >= value) return false;
  std::vector<uint32_t> nodes = FindNodes(pass_, index_, s, value, job.id);
  if (nodes.empty()) {
    if (!holds) place_failed_[s.id] = std::max<int64_t>(place_failed_[s.id], value);
    return false;
  }
  Placement placement;
  placement.job = job.id;
  placement.nodes = CommitGang(pass_, index_, s, nodes);
  if (s.topo_level >= 0) {
    placement.topology_domains = DomainNames(pass_, s, nodes);
    placement.topology_min_domains = MinDomains(pass_, s);
  }
  out_.placements.push_back(std::move(placement));
  pass_.quota.Add(job.tenant, Ask(pass_, job));
  if (job.holds) ReleaseHeld(job.id);
  return true;
}

bool Planner::TryPreempt(const Job& job, bool within) {
  Preemptor who{&job, within};
  if (!MayPreemptAnyone(pass_, who)) return false;
  PreemptKey key{job.shape, job.cls, job.tenant, within};
  if (preempt_failed_.contains(key)) return false;
  if (searches_ >= pass_.policy.preemption_searches_per_pass) {
    deferred_ = true;
    return false;
  }
  ++searches_;
  PreemptionPlan plan;
  if (!FindVictims(pass_, who, &plan)) {
    preempt_failed_.insert(key);
    return false;
  }
  for (const Victim& v : plan.victims) {
    Gang& g = pass_.gangs[v.gang];
    g.evicting = true;
    pass_.leaving[g.tenant] += g.amount;
    out_.evictions.push_back(MakeEviction(pass_, g, job, v.reason));
  }
  Reserve(job, plan.nodes, Reservation::Kind::kPreemption);
  pass_.quota.Add(job.tenant, Ask(pass_, job));
  return true;
}

bool Planner::TryHeadOfLine(const Job& job) {
  const Shape& s = pass_.shapes[job.shape];
  const std::string& pool = pass_.filters[s.filter].pool;
  // An MPS share holds no node for itself: what it waits for is units of a pool, which
  // whole-GPU and CPU jobs beside it never take, and held nodes would keep them off the
  // node's whole GPUs. It waits in line for a pool as shares end.
  if (s.share || head_pools_.contains(pool)) return false;
  std::vector<uint32_t> nodes = PickReservation(pass_, index_, s, ClassValue(job), job.id);
  if (nodes.empty()) return false;
  head_pools_.insert(pool);
  Reserve(job, nodes, Reservation::Kind::kHeadOfLine);
  return true;
}

void Planner::Reserve(const Job& job, const std::vector<uint32_t>& nodes, Reservation::Kind kind) {
  for (uint32_t node : nodes) pass_.reserved[node] = NodeReservation{ClassValue(job), job.id};
  pass_.reserved_list.insert(pass_.reserved_list.end(), nodes.begin(), nodes.end());
  out_.reservations.push_back(Reservation{job.id, kind, nodes});
}

// A reservation from the last pass that no victim backs any more (or whose job just
// started) frees its nodes; jobs that found no room before may find it now.
void Planner::ReleaseHeld(JobId id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  for (uint32_t node : it->second) {
    if (pass_.reserved[node].job == id) pass_.reserved[node] = NodeReservation{};
  }
  held_.erase(it);
  std::fill(place_failed_.begin(), place_failed_.end(), kNever);
  preempt_failed_.clear();
}

}  // namespace

Decisions PlanPass(Pass& pass) {
  Decisions out;
  Planner(pass, out).Run();
  return out;
}

}  // namespace internal

Decisions Plan(const ClusterView& view, const Policy& policy, Time now) {
  internal::Pass pass(view, policy, now);
  internal::BuildPass(pass);
  return internal::PlanPass(pass);
}

}  // namespace baton::sched
