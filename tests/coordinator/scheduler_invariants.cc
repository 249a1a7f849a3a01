#include "tests/coordinator/scheduler_invariants.h"

#include <algorithm>
#include <map>
#include <set>

#include "coordinator/scheduler/fair_share.h"

namespace baton::sched::testing {
namespace {

struct NodeUse {
  std::map<std::string, JobId> gpus;  // uuid -> holder
  std::set<uint32_t> cores;
  uint64_t millis = 0, mem = 0;
  std::map<std::string, std::set<bool>> physical;  // physical GPU -> kinds (service?)
  struct Pool {
    uint64_t units = 0, mem = 0;
    std::set<std::string> users;
  };
  std::map<std::string, Pool> pools;  // MPS pool uuid -> its shares summed
};

class Checker {
 public:
  Checker(const ClusterView& v, const Policy& p, Time now, const Decisions& d)
      : v_(v), p_(p), now_(now), d_(d) {
    for (uint32_t i = 0; i < v.nodes.size(); ++i) node_ids_[v.nodes[i].name] = i;
    for (const auto& j : v.pending) pending_[j.id] = &j;
    for (const auto& g : v.running) running_[g.id] = &g;
  }

  std::vector<std::string> Run() {
    for (const auto& g : v_.running) Hold(g.id, IsService(g.priority_class), g.user, g.nodes);
    for (const auto& pl : d_.placements) CheckPlacement(pl);
    for (const auto& [name, i] : node_ids_) CheckCapacity(i);
    for (const auto& e : d_.evictions) CheckEviction(e);
    CheckOutcomes();
    return problems_;
  }

 private:
  bool IsService(const std::string& cls) const {
    const PriorityClass* c = p_.Find(cls);
    return c && c->service;
  }

  void Problem(const std::string& what) { problems_.push_back(what); }

  void Hold(JobId job, bool service, const std::string& user, const std::vector<HeldNode>& nodes) {
    for (const HeldNode& h : nodes) {
      auto it = node_ids_.find(h.node);
      if (it == node_ids_.end()) continue;
      const NodeInfo& n = v_.nodes[it->second];
      NodeUse& use = use_[it->second];
      for (const std::string& uuid : h.gpu_uuids) {
        if (h.gpu_share_percent > 0) {  // a share: counted against its pool, not held whole
          NodeUse::Pool& pool = use.pools[uuid];
          pool.units += h.gpu_share_percent;
          pool.mem += h.gpu_memory_bytes;
          pool.users.insert(user);
          continue;
        }
        if (!use.gpus.emplace(uuid, job).second) {
          Problem("GPU " + uuid + " given to job " + std::to_string(job) + " and job " +
                  std::to_string(use.gpus[uuid]));
        }
        for (const GpuInfo& g : n.gpus) {
          if (g.uuid == uuid)
            use.physical[g.mig_profile.empty() ? g.uuid : g.parent_uuid].insert(service);
        }
      }
      for (const HeldRank& r : h.ranks) {
        for (uint32_t c : r.cpus) {
          if (!use.cores.insert(c).second) {
            Problem("core " + std::to_string(c) + " on " + h.node + " given twice");
          }
        }
      }
      use.millis += h.cpu_millis;
      use.mem += h.memory_bytes;
    }
  }

  bool Admits(const NodeInfo& n, const JobRequest& r) const {
    std::string pool = r.pool.empty() ? p_.default_pool : r.pool;
    if ((n.pool.empty() ? p_.default_pool : n.pool) != pool) return false;
    for (const auto& [k, val] : r.selector) {
      auto it = n.labels.find(k);
      if (it == n.labels.end() || it->second != val) return false;
    }
    return std::all_of(n.taints.begin(), n.taints.end(), [&](const Taint& t) {
      return std::any_of(r.tolerations.begin(), r.tolerations.end(), [&](const Toleration& o) {
        return o.key == t.key && (o.effect.empty() || o.effect == t.effect) &&
               (o.exists || o.value == t.value);
      });
    });
  }

  void CheckPlacement(const Placement& pl) {
    std::string id = "job " + std::to_string(pl.job);
    auto it = pending_.find(pl.job);
    if (it == pending_.end()) return Problem(id + " placed but not pending");
    const PendingJob& j = *it->second;
    if (!placed_.insert(pl.job).second) Problem(id + " placed twice");
    if (j.cooldown_until > now_) Problem(id + " placed during its cooldown");
    const JobRequest& r = j.request;
    std::set<uint32_t> nodes;
    for (const NodePlacement& np : pl.nodes) {
      nodes.insert(np.node);
      const NodeInfo& n = v_.nodes[np.node];
      if (!n.schedulable) Problem(id + " placed on unschedulable " + n.name);
      if (!Admits(n, r)) Problem(id + " placed on " + n.name + " which does not admit it");
      if (np.gpus.size() != r.gpus_per_node) Problem(id + " got a partial node on " + n.name);
      if (np.ranks.size() != r.ranks_per_node) Problem(id + " rank count wrong on " + n.name);
      if (np.cpu_millis != r.cpu_millis_per_node || np.memory_bytes != r.memory_bytes_per_node) {
        Problem(id + " CPU or memory differs from its request on " + n.name);
      }
      for (uint32_t g : np.gpus) {
        if (n.gpus[g].mig_profile != r.mig_profile) Problem(id + " got the wrong GPU kind");
        if (n.gpus[g].mps != (r.gpu_share_percent > 0)) {
          Problem(id + (n.gpus[g].mps ? " took an MPS pool whole" : " got a share of a whole GPU"));
        }
      }
      if (np.gpu_share_percent != r.gpu_share_percent || np.gpu_memory_bytes < r.gpu_memory_bytes) {
        Problem(id + " placed with a share other than its request on " + n.name);
      }
      if (IsService(j.priority_class)) CheckWholeCores(id, n, np);
    }
    if (nodes.size() != pl.nodes.size() || nodes.size() != r.nodes) {
      Problem(id + " is not a whole gang of distinct nodes");
    }
    Hold(pl.job, IsService(j.priority_class), j.user, ToHeld(v_, pl));
  }

  // Inference holds whole cores: every SMT sibling of each CPU it was given.
  void CheckWholeCores(const std::string& id, const NodeInfo& n, const NodePlacement& np) {
    std::map<uint32_t, std::vector<uint32_t>> cpus_of;  // core -> its CPUs
    std::map<uint32_t, uint32_t> core_of;
    for (const NumaInfo& m : n.numa) {
      for (size_t i = 0; i < m.cpus.size(); ++i) {
        cpus_of[CoreOf(m, i)].push_back(m.cpus[i]);
        core_of[m.cpus[i]] = CoreOf(m, i);
      }
    }
    std::set<uint32_t> mine;
    for (const RankBinding& r : np.ranks) mine.insert(r.cpus.begin(), r.cpus.end());
    for (uint32_t c : mine) {
      auto core = core_of.find(c);
      if (core == core_of.end()) continue;
      for (uint32_t sibling : cpus_of[core->second]) {
        if (!mine.count(sibling)) {
          Problem(id + " holds CPU " + std::to_string(c) + " without its SMT sibling " +
                  std::to_string(sibling) + " on " + n.name);
        }
      }
    }
  }

  void CheckCapacity(uint32_t i) {
    const NodeInfo& n = v_.nodes[i];
    const NodeUse& use = use_[i];
    if (use.millis > n.cpu_millis) Problem("CPU over-committed on " + n.name);
    if (use.mem > n.memory_bytes) Problem("memory over-committed on " + n.name);
    for (const auto& [phys, kinds] : use.physical) {
      if (kinds.size() > 1) Problem("training and inference share GPU " + phys);
    }
    for (const auto& [uuid, pool] : use.pools) {
      const std::string& name = uuid;  // clang 14's lambdas capture no structured binding
      auto gpu = std::find_if(n.gpus.begin(), n.gpus.end(),
                              [&](const GpuInfo& g) { return g.uuid == name; });
      if (gpu == n.gpus.end() || !gpu->mps) Problem("a share of " + uuid + ", not an MPS pool");
      if (pool.units > 100) Problem("MPS pool " + uuid + " over 100 units");
      if (gpu != n.gpus.end() && pool.mem > gpu->memory_bytes) {
        Problem("MPS pool " + uuid + " over its memory");
      }
      if (pool.users.size() > 1) Problem("MPS pool " + uuid + " holds shares of several users");
      if (use.gpus.count(uuid)) Problem("MPS pool " + uuid + " also held whole");
    }
  }

  // Use per tenant at the start of the pass, against its nominal GPUs.
  bool Borrowing(const std::string& tenant) const {
    const TenantPolicy& t = p_.Tenant(tenant);
    if (!t.nominal) return false;
    double gpus = 0;
    uint64_t millis = 0, mem = 0;
    for (const auto& g : v_.running) {
      if (g.tenant != tenant) continue;
      for (const auto& h : g.nodes) {
        gpus += HeldGpus(h);
        millis += h.cpu_millis;
        mem += h.memory_bytes;
      }
    }
    return gpus > t.nominal->gpus || millis > t.nominal->cpu_millis ||
           mem > t.nominal->memory_bytes;
  }

  void CheckEviction(const Eviction& e) {
    std::string id = "eviction of " + std::to_string(e.victim);
    auto victim = running_.find(e.victim);
    auto preemptor = pending_.find(e.preemptor);
    if (victim == running_.end() || preemptor == pending_.end()) {
      return Problem(id + ": unknown victim or preemptor");
    }
    const RunningGang& g = *victim->second;
    const PriorityClass* vc = p_.Find(g.priority_class);
    const PriorityClass* pc = p_.Find(preemptor->second->priority_class);
    if (!vc || !pc) return Problem(id + ": unknown class");
    if (g.evicting) Problem(id + ": already leaving");
    if (!vc->preemptible || vc->service) Problem(id + ": class " + vc->name + " is protected");
    if (now_ - g.started < vc->min_runtime_s * 1000) Problem(id + ": inside minimum runtime");
    bool lower = vc->value < pc->value && pc->may_preempt;
    bool reclaim = e.reason == EvictionReason::kQuotaReclaimed && vc->value <= pc->value &&
                   g.tenant != preemptor->second->tenant && Borrowing(g.tenant);
    if (!lower && !reclaim) Problem(id + ": neither a lower class nor a reclaimed borrower");
    if (!victims_.insert(e.victim).second) Problem(id + ": evicted twice");
  }

  void CheckOutcomes() {
    if (d_.outcomes.size() != v_.pending.size()) Problem("not one outcome per pending job");
    std::set<JobId> preemptors;
    for (const auto& e : d_.evictions) preemptors.insert(e.preemptor);
    for (const auto& o : d_.outcomes) {
      bool placed = placed_.count(o.job) > 0;
      if (placed != (o.outcome == Outcome::kPlaced)) {
        Problem("job " + std::to_string(o.job) + ": outcome and placement disagree");
      }
      if (preemptors.count(o.job) && o.outcome != Outcome::kReserved) {
        Problem("job " + std::to_string(o.job) + " evicts but is not reserved");
      }
      if (o.reason.empty()) Problem("job " + std::to_string(o.job) + " has no reason");
    }
  }

  const ClusterView& v_;
  const Policy& p_;
  Time now_;
  const Decisions& d_;
  std::map<std::string, uint32_t> node_ids_;
  std::map<JobId, const PendingJob*> pending_;
  std::map<JobId, const RunningGang*> running_;
  std::map<uint32_t, NodeUse> use_;
  std::set<JobId> placed_, victims_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> CheckDecisions(const ClusterView& view, const Policy& policy, Time now,
                                        const Decisions& d) {
  return Checker(view, policy, now, d).Run();
}

namespace {

std::string DiffOutcomes(const Decisions& a, const Decisions& b) {
  if (a.outcomes.size() != b.outcomes.size()) return "outcome counts differ";
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    const JobOutcome &x = a.outcomes[i], &y = b.outcomes[i];
    if (x.job != y.job || x.outcome != y.outcome || x.reason.str() != y.reason.str() ||
        x.position != y.position) {
      return "outcome " + std::to_string(i) + " differs: job " + std::to_string(x.job) + " vs " +
             std::to_string(y.job) + ": " + x.reason.str() + " | " + y.reason.str();
    }
  }
  return "";
}

std::string DiffPlacements(const Decisions& a, const Decisions& b) {
  if (a.placements.size() != b.placements.size()) return "placement counts differ";
  for (size_t i = 0; i < a.placements.size(); ++i) {
    const Placement &x = a.placements[i], &y = b.placements[i];
    if (x.job != y.job || x.nodes.size() != y.nodes.size()) return "placement job differs";
    for (size_t k = 0; k < x.nodes.size(); ++k) {
      const NodePlacement &p = x.nodes[k], &q = y.nodes[k];
      if (p.node != q.node || p.gpus != q.gpus || p.ranks.size() != q.ranks.size()) {
        return "placement of job " + std::to_string(x.job) + " differs";
      }
      for (size_t r = 0; r < p.ranks.size(); ++r) {
        if (p.ranks[r].numa != q.ranks[r].numa || p.ranks[r].cpus != q.ranks[r].cpus ||
            p.ranks[r].gpus != q.ranks[r].gpus) {
          return "rank binding of job " + std::to_string(x.job) + " differs";
        }
      }
    }
  }
  return "";
}

}  // namespace

std::string DiffDecisions(const Decisions& a, const Decisions& b) {
  if (std::string diff = DiffOutcomes(a, b); !diff.empty()) return diff;
  if (std::string diff = DiffPlacements(a, b); !diff.empty()) return diff;
  if (a.evictions.size() != b.evictions.size()) return "eviction counts differ";
  for (size_t i = 0; i < a.evictions.size(); ++i) {
    if (a.evictions[i].victim != b.evictions[i].victim ||
        a.evictions[i].preemptor != b.evictions[i].preemptor ||
        a.evictions[i].reason != b.evictions[i].reason) {
      return "eviction " + std::to_string(i) + " differs";
    }
  }
  if (a.reservations.size() != b.reservations.size()) return "reservation counts differ";
  for (size_t i = 0; i < a.reservations.size(); ++i) {
    if (a.reservations[i].job != b.reservations[i].job ||
        a.reservations[i].nodes != b.reservations[i].nodes ||
        a.reservations[i].kind != b.reservations[i].kind) {
      return "reservation " + std::to_string(i) + " differs";
    }
  }
  return "";
}

}  // namespace baton::sched::testing

namespace baton::sched::testing {
namespace {

std::string Held(const HeldNode& h) {
  std::string out = h.node + "[";
  for (const auto& g : h.gpu_uuids) out += g + " ";
  out += "cpu=" + std::to_string(h.cpu_millis) + " ranks:";
  for (const auto& r : h.ranks) {
    out += " numa" + std::to_string(r.numa) + "{";
    for (uint32_t c : r.cpus) out += std::to_string(c) + ",";
    out += "}";
  }
  return out + "]";
}

}  // namespace

std::string DescribePass(const ClusterView& view, const Decisions& d) {
  std::string out;
  for (const NodeInfo& n : view.nodes) {
    out += "node " + n.name + " pool=" + n.pool + " gpus=" + std::to_string(n.gpus.size()) +
           " numa=" + std::to_string(n.numa.size()) + " cpu=" + std::to_string(n.cpu_millis) +
           (n.schedulable ? "" : " unschedulable") + "\n";
  }
  for (const RunningGang& g : view.running) {
    out += "running " + std::to_string(g.id) + " " + g.tenant + "/" + g.priority_class +
           (g.evicting ? " evicting for " + std::to_string(g.evicting_for) : "");
    for (const HeldNode& h : g.nodes) out += " " + Held(h);
    out += "\n";
  }
  for (const PendingJob& j : view.pending) {
    const JobRequest& r = j.request;
    out += "pending " + std::to_string(j.id) + " " + j.tenant + "/" + j.priority_class + " " +
           std::to_string(r.nodes) + "x" + std::to_string(r.gpus_per_node) +
           " ranks=" + std::to_string(r.ranks_per_node) +
           " cpu=" + std::to_string(r.cpu_millis_per_node) + " mig=" + r.mig_profile +
           " pool=" + r.pool + "\n";
  }
  for (const JobOutcome& o : d.outcomes) {
    out += "outcome " + std::to_string(o.job) + ": " + std::string(OutcomeName(o.outcome)) + " — " +
           o.reason.str() + "\n";
  }
  for (const Placement& p : d.placements) {
    out += "placed " + std::to_string(p.job);
    for (const HeldNode& h : ToHeld(view, p)) out += " " + Held(h);
    out += "\n";
  }
  for (const Eviction& e : d.evictions) {
    out += "evict " + std::to_string(e.victim) + " for " + std::to_string(e.preemptor) + "\n";
  }
  return out;
}

}  // namespace baton::sched::testing
