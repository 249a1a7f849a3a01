#include "launcher/agent/isolation/rank_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "launcher/agent/isolation/cpu_plan.h"

namespace baton {
namespace {

std::vector<uint32_t> Sorted(std::set<uint32_t> s) { return {s.begin(), s.end()}; }

struct Node {
  std::set<uint32_t> cpus, mems;        // the attempt's
  std::map<uint32_t, int32_t> numa_of;  // CPU -> its NUMA node
  std::map<int32_t, std::vector<uint32_t>> numa_cpus;
};

Node Attempt(const v1::Inventory& inv, const std::vector<uint32_t>& cpus,
             const std::vector<uint32_t>& mems) {
  Node n;
  n.cpus.insert(cpus.begin(), cpus.end());
  n.mems.insert(mems.begin(), mems.end());
  for (const auto& m : inv.numa_nodes()) {
    n.numa_cpus[m.id()].assign(m.cpus().begin(), m.cpus().end());
    for (uint32_t c : m.cpus()) {
      n.numa_of[c] = m.id();
      if (cpus.empty()) n.cpus.insert(c);
    }
    if (mems.empty() && m.id() >= 0) n.mems.insert(static_cast<uint32_t>(m.id()));
  }
  if (n.cpus.empty()) {  // an inventory without NUMA nodes
    for (uint32_t c = 0; c < inv.cpus(); ++c) n.cpus.insert(c);
  }
  return n;
}

// Charged CPUs, all of them the attempt's: exactly those, memory on their nodes.
bool OnCharged(const Node& n, const v1::RankBinding& b, RankPlan* p) {
  if (b.cpus().empty()) return false;
  std::set<uint32_t> cpus(b.cpus().begin(), b.cpus().end()), mems;
  for (uint32_t c : cpus) {
    if (!n.cpus.count(c)) return false;
    auto it = n.numa_of.find(c);
    if (it != n.numa_of.end() && it->second >= 0 && n.mems.count(it->second)) {
      mems.insert(static_cast<uint32_t>(it->second));
    }
  }
  p->cpus = Sorted(cpus);
  p->mems = Sorted(mems);
  p->bind = ProcessBinding{p->cpus, p->mems};
  return true;
}

// On its NUMA node: the node's CPUs the attempt has, memory bound to the node. It asks
// the kernel for all of the node's CPUs: the cpuset narrows that, and widens it back.
bool OnNuma(const Node& n, const v1::RankBinding& b, RankPlan* p) {
  auto node = n.numa_cpus.find(b.numa());
  if (b.numa() < 0 || node == n.numa_cpus.end() || !n.mems.count(b.numa())) return false;
  std::vector<uint32_t> cpus;
  for (uint32_t c : node->second) {
    if (n.cpus.count(c)) cpus.push_back(c);
  }
  if (cpus.empty()) return false;
  std::sort(cpus.begin(), cpus.end());
  p->cpus = cpus;
  p->mems = {static_cast<uint32_t>(b.numa())};
  std::vector<uint32_t> whole = node->second;
  std::sort(whole.begin(), whole.end());
  p->bind = ProcessBinding{whole, p->mems};
  return true;
}

}  // namespace

std::vector<RankPlan> PlanRanks(const v1::Inventory& inventory,
                                const std::vector<uint32_t>& attempt_cpus,
                                const std::vector<uint32_t>& attempt_mems,
                                const std::vector<v1::RankBinding>& bindings,
                                uint32_t local_ranks) {
  Node n = Attempt(inventory, attempt_cpus, attempt_mems);
  std::vector<RankPlan> out(local_ranks);
  for (uint32_t r = 0; r < local_ranks; ++r) {
    v1::RankBinding b;
    b.set_numa(-1);
    if (r < bindings.size()) b = bindings[r];
    RankPlan& p = out[r];
    p.numa = b.numa();
    if (OnCharged(n, b, &p) || OnNuma(n, b, &p)) continue;
    p.cpus = Sorted(n.cpus);  // spans: its cpuset decides (bind stays empty)
    p.mems = Sorted(n.mems);
  }
  return out;
}

void SetRankPlacements(const std::vector<RankPlan>& plans, v1::IsolationLimits* limits) {
  limits->clear_ranks();
  for (size_t r = 0; r < plans.size(); ++r) {
    v1::RankPlacement* p = limits->add_ranks();
    p->set_local_rank(static_cast<uint32_t>(r));
    p->set_numa(plans[r].numa);
    p->set_cpus(FormatCpuList(plans[r].cpus));
    p->set_mems(FormatCpuList(plans[r].mems));
  }
}

}  // namespace baton
