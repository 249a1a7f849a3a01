#include "coordinator/scheduler/preemption.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <span>
#include <tuple>

#include "coordinator/scheduler/fit.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched::internal {
namespace {

enum Kind : uint8_t { kNot = 0, kByClass = 1, kByReclaim = 2 };

struct NodeCost {
  double cost = 0;
  uint32_t victims = 0;
  uint32_t node = 0;
  bool operator<(const NodeCost& o) const {
    return std::tie(cost, victims, node) < std::tie(o.cost, o.victims, o.node);
  }
};

class Search {
 public:
  Search(Pass& pass, const Preemptor& who)
      : pass_(pass),
        who_(who),
        job_(*who.job),
        shape_(pass.shapes[who.job->shape]),
        cls_(*pass.classes[who.job->cls]),
        borrowing_(!who.within_nominal),
        kind_(pass.gangs.size(), kNot),
        evicted_(pass.gangs.size(), 0) {
    // Whether each tenant borrows, as the search starts (nothing reclaimed yet): KindOf
    // asks it of every gang.
    borrows_at_start_.resize(pass.tenant_names.size());
    for (uint32_t t = 0; t < borrows_at_start_.size(); ++t) {
      borrows_at_start_[t] = ReclaimLeft(t, {});
    }
    for (uint32_t g = 0; g < pass.gangs.size(); ++g) kind_[g] = KindOf(pass.gangs[g]);
    reclaimed_.resize(pass.tenant_names.size());
  }

  bool Run(PreemptionPlan* plan);

 private:
  using Cands = std::vector<std::pair<double, uint32_t>>;  // lower bound, node
  bool RunOn(std::span<const std::pair<double, uint32_t>> cands, PreemptionPlan* plan);
  bool RunByDomain(const Cands& cands, PreemptionPlan* plan);
  using Local = std::vector<std::pair<uint32_t, Amount>>;  // tenant, reclaimed on a node

  Kind KindOf(const Gang& g) const;
  bool ReclaimLeft(uint32_t tenant, const Local& local) const;
  std::vector<std::pair<double, uint32_t>> Candidates(bool sorted);
  bool SelectOnNode(uint32_t node, std::vector<uint32_t>* victims, double* cost);
  void Reprieve(uint32_t node, NodeFree& f, std::vector<uint32_t>& chosen);
  bool Walk(const std::vector<NodeCost>& order, PreemptionPlan* plan, bool* skipped);

  Pass& pass_;
  const Preemptor& who_;
  const Job& job_;
  const Shape& shape_;
  const PriorityClass& cls_;
  bool borrowing_;
  std::vector<uint8_t> kind_;
  std::vector<uint8_t> borrows_at_start_;  // per tenant: ReclaimLeft(tenant, {}) at the start
  std::vector<uint8_t> evicted_;           // chosen by the walk so far
  std::vector<uint32_t> touched_;          // the gangs evicted_ marks: what ClearWalk resets
  std::vector<Amount> reclaimed_;          // per tenant, by the walk so far
  // Forgets the last walk's choices (cheaper than refilling evicted_, one byte per gang,
  // for every domain a topology-bound search tries).
  void ClearWalk() {
    for (uint32_t g : touched_) evicted_[g] = 0;
    touched_.clear();
    std::fill(reclaimed_.begin(), reclaimed_.end(), Amount{});
  }
};

Kind Search::KindOf(const Gang& g) const {
  if (who_.hypothetical) {
    bool may = !g.evicting && g.cls != kNone && pass_.classes[g.cls]->preemptible;
    return may && g.src->id != job_.src->id ? kByClass : kNot;
  }
  if (g.evicting || g.cls == kNone) return kNot;
  if (g.protected_ && !cls_.evicts_within_min_runtime) return kNot;
  const PriorityClass& vc = *pass_.classes[g.cls];
  if (!vc.preemptible || g.src->id == job_.src->id) return kNot;
  bool victim_borrows = borrows_at_start_[g.tenant];
  bool own = g.tenant == job_.tenant;
  if (cls_.may_preempt && vc.value < cls_.value && (!borrowing_ || own || victim_borrows)) {
    return kByClass;
  }
  if (who_.within_nominal && !own && victim_borrows && vc.value <= cls_.value) return kByReclaim;
  return kNot;
}

// The tenant still borrows (as it did at the start of the pass) after what is leaving and
// what this search reclaimed.
bool Search::ReclaimLeft(uint32_t tenant, const Local& local) const {
  Amount gone;
  if (!reclaimed_.empty()) gone += reclaimed_[tenant];
  for (const auto& [t, a] : local) {
    if (t == tenant) gone += a;
  }
  return !Minus(pass_.StillBorrowed(tenant), gone).IsZero();
}

// Nodes where the victims allowed could make room, with a lower bound on the lost work:
// the missing GPUs times the youngest candidate's age.
std::vector<std::pair<double, uint32_t>> Search::Candidates(bool sorted) {
  std::vector<std::pair<double, uint32_t>> out;
  std::vector<int8_t> hw_fits(pass_.hw_rep.size(), -1);  // per hardware class
  auto fits = [&](uint32_t node) {
    int8_t& known = hw_fits[pass_.hw[node].hw];
    if (known < 0) known = HwFits(pass_, node, shape_) ? 1 : 0;
    return known == 1;
  };
  for (uint32_t group : EligibleGroups(pass_, shape_.filter)) {
    for (uint32_t node : pass_.groups[group].nodes) {
      if (!pass_.hw[node].schedulable || !Usable(pass_, node, cls_.value, job_.id) || !fits(node)) {
        continue;
      }
      const NodeFree& f = pass_.free[node];
      auto have = static_cast<uint64_t>(std::popcount(KindMask(pass_, node, f, shape_)));
      // Victims never free a pool's units (services are never evicted): a share needs a
      // pool with room already, and victims only for the node's CPUs or memory.
      if (shape_.share && have == 0) continue;
      uint64_t gpus = have, millis = f.millis, mem = f.mem;
      double youngest = std::numeric_limits<double>::infinity();
      for (uint32_t i = pass_.node_hold_begin[node]; i < pass_.node_hold_begin[node + 1]; ++i) {
        const Pass::HoldBrief& h = pass_.hold_brief[i];
        if (!kind_[h.gang]) continue;
        gpus += h.gpus;
        millis += h.millis;
        mem += h.mem;
        youngest = std::min(youngest, h.age_s);
      }
      if (gpus < shape_.gpus || millis < shape_.cpu || mem < shape_.mem) continue;
      double lb = have >= shape_.gpus ? 0 : static_cast<double>(shape_.gpus - have) * youngest;
      out.emplace_back(lb, node);
    }
  }
  if (sorted) std::sort(out.begin(), out.end());
  return out;
}

// The cheapest victims on one node that make the gang member fit there, besides the
// gangs the walk already chose: cheapest first until it fits, then each victim given a
// reprieve (most lost work first) if the member still fits without evicting it.
bool Search::SelectOnNode(uint32_t node, std::vector<uint32_t>* victims, double* cost) {
  NodeFree f = pass_.free[node];
  std::vector<uint32_t> cands;  // holds of possible victims
  for (uint32_t hold : HoldsOn(pass_, node)) {
    uint32_t g = pass_.holds[hold].gang;
    if (evicted_[g]) {
      Release(pass_.holds[hold], f);
    } else if (kind_[g]) {
      cands.push_back(hold);
    }
  }
  victims->clear();
  *cost = 0;
  NodeFree trial = f;
  if (FitNode(pass_, node, trial, shape_, nullptr)) return true;
  auto gang = [&](uint32_t hold) -> const Gang& { return pass_.gangs[pass_.holds[hold].gang]; };
  std::sort(cands.begin(), cands.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(gang(a).lost, gang(a).src->id) < std::tie(gang(b).lost, gang(b).src->id);
  });
  Local local;
  std::vector<uint32_t> chosen;  // holds
  bool fits = false;
  for (size_t i = 0; i < cands.size() && !fits; ++i) {
    const Gang& g = gang(cands[i]);
    bool reclaim = kind_[pass_.holds[cands[i]].gang] == kByReclaim;
    if (reclaim && !ReclaimLeft(g.tenant, local)) continue;
    Release(pass_.holds[cands[i]], f);
    chosen.push_back(cands[i]);
    if (reclaim) local.emplace_back(g.tenant, g.amount);
    trial = f;
    fits = FitNode(pass_, node, trial, shape_, nullptr);
  }
  if (!fits) return false;
  Reprieve(node, f, chosen);
  for (uint32_t hold : chosen) {
    victims->push_back(pass_.holds[hold].gang);
    *cost += gang(hold).lost;
  }
  return true;
}

// Each chosen victim, most lost work first, stays if the member fits without evicting it.
void Search::Reprieve(uint32_t node, NodeFree& f, std::vector<uint32_t>& chosen) {
  for (size_t i = chosen.size(); i-- > 0;) {
    NodeFree back = f;
    Reapply(pass_.holds[chosen[i]], back);
    NodeFree trial = back;
    if (FitNode(pass_, node, trial, shape_, nullptr)) {
      f = back;
      chosen.erase(chosen.begin() + static_cast<ptrdiff_t>(i));
    }
  }
}

// Takes nodes in cost order, each with the victims it needs given those already taken.
bool Search::Walk(const std::vector<NodeCost>& order, PreemptionPlan* plan, bool* skipped) {
  ClearWalk();
  plan->victims.clear();
  plan->nodes.clear();
  *skipped = false;
  std::vector<uint32_t> victims;
  double cost = 0;
  for (const NodeCost& c : order) {
    if (plan->nodes.size() == shape_.nodes) break;
    if (!SelectOnNode(c.node, &victims, &cost)) {
      *skipped = true;
      continue;
    }
    for (uint32_t v : victims) {
      evicted_[v] = 1;
      touched_.push_back(v);
      bool by_class = kind_[v] == kByClass;
      if (!by_class) reclaimed_[pass_.gangs[v].tenant] += pass_.gangs[v].amount;
      plan->victims.push_back(
          {v, by_class ? EvictionReason::kHigherClass : EvictionReason::kQuotaReclaimed});
    }
    plan->nodes.push_back(c.node);
  }
  std::sort(plan->victims.begin(), plan->victims.end(), [&](const Victim& a, const Victim& b) {
    return pass_.gangs[a.gang].src->id < pass_.gangs[b.gang].src->id;
  });
  return plan->nodes.size() == shape_.nodes;
}

bool Search::Run(PreemptionPlan* plan) {
  // A topology-bound search sorts each domain's candidates apart (a few each) and the
  // whole list only if it falls back to the plain search.
  bool by_domain = shape_.topo_level >= 0;
  Cands cands = Candidates(!by_domain);
  if (cands.size() < shape_.nodes) return false;
  if (!by_domain) return RunOn(cands, plan);
  if (RunByDomain(cands, plan)) return true;
  if (shape_.topo_required) return false;
  std::sort(cands.begin(), cands.end());
  return RunOn(cands, plan);
}

// A topology-bound preemptor: the victims that free one domain of its level, the domain
// whose plan loses the least work (then evicts the fewest gangs, then comes first).
// Domains are searched in order of a lower bound on their cost (the sum of their n
// cheapest nodes' bounds: each node's victims hold its missing GPUs, none younger than
// its youngest candidate) and the search stops when no domain left can beat the best.
// `cands` may come in any order.
bool Search::RunByDomain(const Cands& cands, PreemptionPlan* plan) {
  // The candidates of each labelled domain, in bound order: a counting sort by domain,
  // then each domain's run sorted.
  const size_t domains = pass_.topo[shape_.topo_level].names.size();
  std::vector<uint32_t> begin(domains + 1, 0);
  for (const auto& c : cands) {
    uint32_t d = DomainOf(pass_, shape_.topo_level, c.second);
    if (d != kNone) ++begin[d + 1];
  }
  for (size_t d = 0; d < domains; ++d) begin[d + 1] += begin[d];
  Cands by_domain(begin[domains]);
  std::vector<uint32_t> at(begin.begin(), begin.end() - 1);
  for (const auto& c : cands) {
    uint32_t d = DomainOf(pass_, shape_.topo_level, c.second);
    if (d != kNone) by_domain[at[d]++] = c;
  }
  auto dom = [&](uint32_t d) {
    return std::span<const std::pair<double, uint32_t>>(by_domain.data() + begin[d],
                                                        begin[d + 1] - begin[d]);
  };
  for (size_t d = 0; d < domains; ++d) {
    std::sort(by_domain.begin() + begin[d], by_domain.begin() + begin[d + 1]);
  }
  std::vector<std::pair<double, uint32_t>> order;  // lower bound, domain
  for (uint32_t d = 0; d < domains; ++d) {
    if (dom(d).size() < shape_.nodes) continue;
    double lb = 0;
    for (uint32_t i = 0; i < shape_.nodes; ++i) lb += dom(d)[i].first;  // cands are sorted
    order.emplace_back(lb, d);
  }
  std::sort(order.begin(), order.end());
  bool found = false;
  std::pair<double, size_t> best{0, 0};
  for (const auto& [lb, d] : order) {
    if (found && lb > best.first) break;
    PreemptionPlan trial;
    if (!RunOn(dom(d), &trial)) continue;
    double lost = 0;
    for (const Victim& v : trial.victims) lost += pass_.gangs[v.gang].lost;
    std::pair<double, size_t> cost{lost, trial.victims.size()};
    if (!found || cost < best) {
      found = true;
      best = cost;
      *plan = std::move(trial);
    }
  }
  return found;
}

// Exact costs in lower-bound order until no unevaluated node can beat the n-th best;
// then the walk. A walk that had to skip a node is redone over every candidate, so the
// answer is the one a full evaluation gives.
bool Search::RunOn(std::span<const std::pair<double, uint32_t>> cands, PreemptionPlan* plan) {
  if (cands.size() < shape_.nodes) return false;
  ClearWalk();  // a previous RunOn's walk
  std::vector<NodeCost> exact;
  std::vector<double> best;  // the n cheapest exact costs, ascending
  std::vector<uint32_t> victims;
  size_t next = 0;
  auto evaluate = [&](size_t upto) {
    for (; next < upto; ++next) {
      if (best.size() == shape_.nodes && cands[next].first > best.back()) return;
      double cost = 0;
      if (!SelectOnNode(cands[next].second, &victims, &cost)) continue;
      exact.push_back({cost, static_cast<uint32_t>(victims.size()), cands[next].second});
      best.insert(std::upper_bound(best.begin(), best.end(), cost), cost);
      if (best.size() > shape_.nodes) best.pop_back();
    }
  };
  evaluate(cands.size());
  std::sort(exact.begin(), exact.end());
  bool skipped = false;
  bool ok = Walk(exact, plan, &skipped);
  if (next == cands.size() || (ok && !skipped)) return ok;
  ClearWalk();
  for (; next < cands.size(); ++next) {
    double cost = 0;
    if (!SelectOnNode(cands[next].second, &victims, &cost)) continue;
    exact.push_back({cost, static_cast<uint32_t>(victims.size()), cands[next].second});
  }
  std::sort(exact.begin(), exact.end());
  return Walk(exact, plan, &skipped);
}

}  // namespace

bool FindVictims(Pass& pass, const Preemptor& who, PreemptionPlan* plan) {
  Search search(pass, who);
  return search.Run(plan);
}

bool MayPreemptAnyone(Pass& pass, const Preemptor& who) {
  const PriorityClass& cls = *pass.classes[who.job->cls];
  bool reclaim = who.within_nominal;
  if (reclaim) {  // someone else must borrow beyond what is already leaving
    reclaim = false;
    for (uint32_t t = 0; t < pass.tenant_names.size() && !reclaim; ++t) {
      reclaim = t != who.job->tenant && !pass.StillBorrowed(t).IsZero();
    }
  }
  // Per filter, once a pass: a cluster labelled by its switch tree has thousands of groups.
  uint32_t fid = pass.shapes[who.job->shape].filter;
  Filter& f = pass.filters[fid];
  if (!f.victims_known) {
    f.min_victim = f.min_quota_victim = std::numeric_limits<int64_t>::max();
    for (uint32_t g : EligibleGroups(pass, fid)) {
      f.min_victim = std::min(f.min_victim, pass.group_min_victim[g]);
      f.min_quota_victim = std::min(f.min_quota_victim, pass.group_min_quota_victim[g]);
    }
    f.victims_known = true;
  }
  return (cls.may_preempt && f.min_victim < cls.value) ||
         (reclaim && f.min_quota_victim <= cls.value);
}

}  // namespace baton::sched::internal
