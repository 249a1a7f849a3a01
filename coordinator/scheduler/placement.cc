#include "coordinator/scheduler/placement.h"

#include <algorithm>
#include <bit>

#include "coordinator/scheduler/fit.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched::internal {

NodeIndex::NodeIndex(const Pass& pass) {
  for (const NodeHw& hw : pass.hw) max_gpus_ = std::max(max_gpus_, hw.gpu_count);
  buckets_.assign(pass.groups.size(), std::vector<absl::btree_set<uint32_t>>(max_gpus_ + 1));
  filled_.assign(max_gpus_ + 1, {});
  count_.assign(pass.hw.size(), 0);
  for (uint32_t i = 0; i < pass.hw.size(); ++i) {
    if (!pass.hw[i].schedulable) continue;
    count_[i] = static_cast<uint8_t>(FreeWhole(pass, i));
    Put(pass.hw[i].group, count_[i], i);
  }
}

void NodeIndex::Put(uint32_t group, uint32_t count, uint32_t node) {
  absl::btree_set<uint32_t>& bucket = buckets_[group][count];
  if (bucket.empty()) filled_[count].insert(group);
  bucket.insert(bucket.end(), node);
}

void NodeIndex::Take(uint32_t group, uint32_t count, uint32_t node) {
  absl::btree_set<uint32_t>& bucket = buckets_[group][count];
  bucket.erase(node);
  if (bucket.empty()) filled_[count].erase(group);
}

uint32_t NodeIndex::FreeWhole(const Pass& pass, uint32_t node) {
  return static_cast<uint32_t>(std::popcount(pass.free[node].gpus & pass.hw[node].whole));
}

void NodeIndex::Update(const Pass& pass, uint32_t node) {
  if (!pass.hw[node].schedulable) return;
  auto now = static_cast<uint8_t>(FreeWhole(pass, node));
  if (now == count_[node]) return;
  Take(pass.hw[node].group, count_[node], node);
  Put(pass.hw[node].group, now, node);
  if (!domain_free_.empty()) MoveDomains(pass, pass.hw[node].group, count_[node], now);
  count_[node] = now;
}

void NodeIndex::MoveDomains(const Pass& pass, uint32_t group, uint32_t from, uint32_t to) {
  for (DomainFree& e : domain_free_) {
    bool was = from >= e.gpus, is = to >= e.gpus;
    if (was == is || pass.filters[e.filter].eligible[group] != 1) continue;
    uint32_t d = pass.topo[e.level].group_domain[group];
    if (d == kNone) {
      is ? ++e.unlabelled : --e.unlabelled;
      continue;
    }
    e.by_free[e.free[d]].erase(d);
    is ? ++e.free[d] : --e.free[d];
    e.by_free[e.free[d]].insert(d);
  }
}

const NodeIndex::DomainFree& NodeIndex::FreeByDomain(Pass& pass, const Shape& s) {
  for (const DomainFree& e : domain_free_) {
    if (e.filter == s.filter && e.gpus == s.gpus && e.level == s.topo_level) return e;
  }
  // Counted from the buckets (no node visited); EligibleGroups also settles every
  // group's eligibility, which MoveDomains reads.
  const TopoLevel& level = pass.topo[s.topo_level];
  const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
  DomainFree e;
  e.filter = s.filter;
  e.gpus = s.gpus;
  e.level = s.topo_level;
  e.free.assign(level.names.size(), 0);
  size_t most = 0;  // nodes of the largest domain: the highest count there can be
  for (const std::vector<uint32_t>& dom : level.groups) {
    size_t n = 0;
    for (uint32_t g : dom) n += pass.groups[g].nodes.size();
    most = std::max(most, n);
  }
  for (uint32_t count = s.gpus; count <= max_gpus_; ++count) {
    ForEachGroup(pass, s.filter, groups, count, [&](uint32_t g) {
      uint32_t d = level.group_domain[g];
      if (d == kNone) {
        e.unlabelled += buckets_[g][count].size();
      } else {
        e.free[d] += static_cast<uint32_t>(buckets_[g][count].size());
      }
      return false;
    });
  }
  e.by_free.resize(most + 1);
  for (uint32_t d = 0; d < e.free.size(); ++d) {
    e.by_free[e.free[d]].insert(e.by_free[e.free[d]].end(), d);
  }
  domain_free_.push_back(std::move(e));
  return domain_free_.back();
}

namespace {

// What an MPS share leaves of the pool it would take on a node, as one number to
// minimize: units left, then memory left (best fit over the cluster as over a node's pools).
uint64_t ShareLeft(const Pass& pass, uint32_t node, const NodeFree& before, const NodeFree& after) {
  const NodeHw& hw = pass.hw[node];
  for (uint32_t k = 0; k < static_cast<uint32_t>(std::popcount(hw.mps)); ++k) {
    if (after.share[k].shares != before.share[k].shares) {
      return uint64_t{after.share[k].units} << 32 | after.share[k].mem_mib;
    }
  }
  return ~uint64_t{0};
}

// MIG gangs: the nodes with slices of the profile, fewest free slices first. MPS shares:
// the nodes with a pool that has room, the one the share leaves least of first.
std::vector<uint32_t> FindMigNodes(Pass& pass, const Shape& s, int32_t class_value, JobId job) {
  if (s.share) {  // no pool has the units or the memory left: no node to visit
    if (pass.most_pool_units < 0) {
      pass.most_pool_units = 0;
      pass.most_pool_mib = 0;
      for (uint32_t node : pass.profile_nodes[s.profile]) {
        const NodeHw& hw = pass.hw[node];
        for (int k = 0; k < std::popcount(hw.mps); ++k) {
          const ShareFree& pool = pass.free[node].share[k];
          pass.most_pool_units = std::max<int32_t>(pass.most_pool_units, pool.units);
          pass.most_pool_mib = std::max<uint64_t>(pass.most_pool_mib, pool.mem_mib);
        }
      }
    }
    if (s.share > static_cast<uint32_t>(pass.most_pool_units) ||
        s.share_mem_mib > pass.most_pool_mib) {
      return {};
    }
    const bool reserved =
        std::any_of(pass.reserved_list.begin(), pass.reserved_list.end(),
                    [&](uint32_t node) { return pass.reserved[node].job == job; });
    for (const auto& [id, value] : pass.shares_refused) {
      const Shape& f = pass.shapes[id];
      if (!reserved && class_value <= value && f.filter == s.filter && f.owner == s.owner &&
          f.model == s.model && f.service == s.service && f.share <= s.share &&
          f.share_mem_mib <= s.share_mem_mib && f.cpu <= s.cpu && f.mem <= s.mem) {
        return {};
      }
    }
  }
  std::vector<std::pair<uint64_t, uint32_t>> fits;  // free slices (or what is left), node
  for (uint32_t node : pass.profile_nodes[s.profile]) {
    if (!Eligible(pass, s.filter, pass.hw[node].group) || !Usable(pass, node, class_value, job)) {
      continue;
    }
    NodeFree trial = pass.free[node];
    uint64_t avail = std::popcount(KindMask(pass, node, trial, s));
    if (!FitNode(pass, node, trial, s, nullptr)) continue;
    fits.emplace_back(s.share ? ShareLeft(pass, node, pass.free[node], trial) : avail, node);
  }
  if (fits.size() < s.nodes) {
    if (s.share) pass.shares_refused.emplace_back(s.id, class_value);
    return {};
  }
  std::sort(fits.begin(), fits.end());
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < (s.topo_level >= 0 ? fits.size() : s.nodes); ++i) {
    out.push_back(fits[i].second);
  }
  return s.topo_level >= 0 ? ChooseByTopology(pass, s, out) : out;
}

// Up to `want` nodes of domain d where a gang member fits now, best fit first.
std::vector<uint32_t> FitInDomain(Pass& pass, const NodeIndex& index, const Shape& s, uint32_t d,
                                  uint32_t want, int32_t class_value, JobId job) {
  std::vector<uint32_t> out;
  for (uint32_t count = s.gpus; count <= index.max_gpus(); ++count) {
    for (uint32_t g : pass.topo[s.topo_level].groups[d]) {
      if (!Eligible(pass, s.filter, g)) continue;
      for (uint32_t node : index.Bucket(g, count)) {
        if (!Usable(pass, node, class_value, job)) continue;
        NodeFree trial = pass.free[node];
        if (!FitNode(pass, node, trial, s, nullptr)) continue;
        out.push_back(node);
        if (out.size() == want) return out;
      }
    }
  }
  return out;
}

// A topology-bound gang within one domain of its level: the domains by how many of their
// nodes have the gang's GPUs free (fewest first: best fit; then domain order), each
// checked node by node, best fit first, until s.nodes fit. Empty when no domain holds it.
// Nothing is scanned beyond the domain that takes it.
std::vector<uint32_t> FindInOneDomain(Pass& pass, const NodeIndex& index, const Shape& s,
                                      int32_t class_value, JobId job,
                                      const NodeIndex::DomainFree& free) {
  for (size_t count = s.nodes; count < free.by_free.size(); ++count) {
    for (uint32_t d : free.by_free[count]) {
      std::vector<uint32_t> out = FitInDomain(pass, index, s, d, s.nodes, class_value, job);
      if (out.size() == s.nodes) return out;
    }
  }
  return {};
}

// The free counts less the nodes reserved for others that the job may not use: still
// upper bounds, but near the truth where big gangs hold room.
std::vector<uint32_t> WithoutReserved(const Pass& pass, const Shape& s, int32_t class_value,
                                      JobId job, const NodeIndex::DomainFree& free) {
  std::vector<uint32_t> out = free.free;
  std::vector<uint32_t> nodes = pass.reserved_list;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  for (uint32_t node : nodes) {
    const NodeHw& hw = pass.hw[node];
    if (!hw.schedulable || Usable(pass, node, class_value, job) ||
        pass.filters[s.filter].eligible[hw.group] != 1 ||
        std::popcount(pass.free[node].gpus & hw.whole) < static_cast<int>(s.gpus)) {
      continue;
    }
    uint32_t d = DomainOf(pass, s.topo_level, node);
    if (d != kNone && out[d] > 0) --out[d];
  }
  return out;
}

// A preferred gang no domain holds: the fewest domains (SpreadOver) by the free counts,
// then each chosen domain's nodes checked. The counts are upper bounds (a node with the
// GPUs free may lack the CPU, memory or NUMA room, or be reserved): a chosen domain
// checked is counted exactly from then on and the choice made again, so that the answer
// is the fewest domains that really hold the gang. *fallback: still no answer after
// kSpreadRounds choices, and the caller must look at every node instead.
constexpr int kSpreadRounds = 8;

std::vector<uint32_t> FindSpread(Pass& pass, const NodeIndex& index, const Shape& s,
                                 int32_t class_value, JobId job, std::vector<uint32_t> free,
                                 bool* fallback) {
  *fallback = false;
  std::vector<bool> exact(free.size(), false);
  size_t levels = pass.topo.size() - static_cast<size_t>(s.topo_level);
  for (int round = 0; round < kSpreadRounds; ++round) {
    std::vector<uint32_t> ids, sizes;
    for (uint32_t d = 0; d < free.size(); ++d) {
      if (free[d] == 0) continue;
      ids.push_back(d);
      sizes.push_back(free[d]);
    }
    auto parent = [&](size_t k, uint32_t i) {
      uint32_t d = ids[i];
      for (size_t up = 0; up < k && d != kNone; ++up) {
        d = pass.topo[static_cast<size_t>(s.topo_level) + up].parent[d];
      }
      return d;
    };
    std::vector<uint32_t> out;
    bool held = true;
    for (auto [i, take] : SpreadOver(sizes, parent, levels, s.nodes)) {
      uint32_t d = ids[i];
      std::vector<uint32_t> nodes =
          FitInDomain(pass, index, s, d, exact[d] ? take : free[d], class_value, job);
      if (!exact[d]) free[d] = static_cast<uint32_t>(nodes.size());  // all of them, looked at
      exact[d] = true;
      if (nodes.size() < take) {
        held = false;
        continue;  // the other picks are still checked: each check makes a count exact
      }
      out.insert(out.end(), nodes.begin(), nodes.begin() + take);
    }
    if (held) return out;  // empty when even the counts do not hold it: nothing does
  }
  *fallback = true;
  return {};
}

}  // namespace

std::vector<uint32_t> FindNodes(Pass& pass, NodeIndex& index, const Shape& s, int32_t class_value,
                                JobId job) {
  if (s.profile >= 0) return FindMigNodes(pass, s, class_value, job);
  if (s.topo_level >= 0) {
    const NodeIndex::DomainFree& free = index.FreeByDomain(pass, s);
    std::vector<uint32_t> one = FindInOneDomain(pass, index, s, class_value, job, free);
    if (!one.empty() || s.topo_required) return one;
    bool fallback = true;
    if (free.unlabelled == 0) {  // unlabelled nodes are domains of one each: the full look below
      std::vector<uint32_t> spread =
          FindSpread(pass, index, s, class_value, job,
                     WithoutReserved(pass, s, class_value, job, free), &fallback);
      if (!fallback) return spread;
    }
  }
  const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
  // A preferred gang no domain holds sees every node that fits (best fit first) and then
  // chooses the fewest domains; others stop at the first s.nodes.
  bool all = s.topo_level >= 0;
  std::vector<uint32_t> out;
  for (uint32_t count = s.gpus; count <= index.max_gpus(); ++count) {
    bool done = index.ForEach(pass, s.filter, groups, count, [&](uint32_t node) {
      if (!Usable(pass, node, class_value, job)) return false;
      NodeFree trial = pass.free[node];
      if (!FitNode(pass, node, trial, s, nullptr)) return false;
      out.push_back(node);
      return !all && out.size() == s.nodes;
    });
    if (done) return out;
  }
  if (!all || out.size() < s.nodes) return {};
  return ChooseByTopology(pass, s, out);
}

std::vector<NodePlacement> CommitGang(Pass& pass, NodeIndex& index, const Shape& s,
                                      const std::vector<uint32_t>& nodes) {
  std::vector<NodePlacement> out;
  for (uint32_t node : nodes) {
    out.push_back(CommitNode(pass, node, s));
    if (s.share) pass.most_pool_units = -1;  // count again at the next share
    index.Update(pass, node);
  }
  return out;
}

uint64_t FeasibleNodes(Pass& pass, const Shape& s) {
  size_t hws = pass.hw_rep.size();
  uint64_t total = 0;
  for (uint32_t g : EligibleGroups(pass, s.filter)) {
    for (uint32_t h = 0; h < hws; ++h) {
      uint32_t n = pass.hw_group_count[g * hws + h];
      if (n && HwFits(pass, pass.hw_rep[h], s)) total += n;
    }
  }
  return total;
}

namespace {

// A topology-bound gang's reservation: the first s.nodes of one domain's usable nodes
// (most free GPUs of the gang's kind first, then node order), the domain with the most
// such GPUs among those with enough nodes (ties: the domain whose first node comes first).
// Empty when no domain has enough.
std::vector<uint32_t> ReserveInOneDomain(Pass& pass, const Shape& s,
                                         const std::vector<std::pair<uint64_t, uint32_t>>& picks) {
  const size_t domains = pass.topo[s.topo_level].names.size();
  struct Sum {
    uint32_t nodes = 0;
    uint64_t gpus = 0;
    std::pair<uint64_t, uint32_t> first{UINT64_MAX, UINT32_MAX};  // its first pick
  };
  std::vector<Sum> sums(domains);
  for (const auto& pick : picks) {
    uint32_t d = DomainOf(pass, s.topo_level, pick.second);
    if (d == kNone) continue;
    ++sums[d].nodes;
    sums[d].gpus += ~pick.first;
    sums[d].first = std::min(sums[d].first, pick);
  }
  uint32_t best = kNone;
  for (uint32_t d = 0; d < domains; ++d) {
    if (sums[d].nodes < s.nodes) continue;
    if (best == kNone || sums[d].gpus > sums[best].gpus ||
        (sums[d].gpus == sums[best].gpus && sums[d].first < sums[best].first)) {
      best = d;
    }
  }
  if (best == kNone) return {};
  std::vector<std::pair<uint64_t, uint32_t>> mine;
  for (const auto& pick : picks) {
    if (DomainOf(pass, s.topo_level, pick.second) == best) mine.push_back(pick);
  }
  std::partial_sort(mine.begin(), mine.begin() + s.nodes, mine.end());
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < s.nodes; ++i) out.push_back(mine[i].second);
  return out;
}

}  // namespace

std::vector<uint32_t> PickReservation(Pass& pass, NodeIndex& index, const Shape& s,
                                      int32_t class_value, JobId job) {
  std::vector<std::pair<uint64_t, uint32_t>> picks;     // (-free GPUs of its kind, node)
  std::vector<int8_t> hw_fits(pass.hw_rep.size(), -1);  // per hardware class
  auto consider = [&](uint32_t node) {
    int8_t& fits = hw_fits[pass.hw[node].hw];
    if (fits < 0) fits = HwFits(pass, node, s) ? 1 : 0;
    if (!fits || !Usable(pass, node, class_value, job)) return;
    auto avail = static_cast<uint64_t>(std::popcount(KindMask(pass, node, pass.free[node], s)));
    picks.emplace_back(~avail, node);
  };
  if (s.profile >= 0) {
    for (uint32_t node : pass.profile_nodes[s.profile]) {
      if (Eligible(pass, s.filter, pass.hw[node].group)) consider(node);
    }
  } else if (s.topo_level >= 0) {  // every usable node counts, in any order: no buckets
    for (uint32_t g : EligibleGroups(pass, s.filter)) {
      for (uint32_t node : pass.groups[g].nodes) {
        if (pass.hw[node].schedulable) consider(node);
      }
    }
  } else {
    const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
    for (uint32_t count = index.max_gpus() + 1; count-- > 0 && picks.size() < s.nodes;) {
      index.ForEach(pass, s.filter, groups, count, [&](uint32_t node) {
        consider(node);
        return false;
      });
    }
  }
  if (picks.size() < s.nodes) return {};
  if (s.topo_level >= 0) {
    // One domain's nodes; a preferred gang no domain holds reserves as any other.
    std::vector<uint32_t> out = ReserveInOneDomain(pass, s, picks);
    if (!out.empty() || s.topo_required) return out;
  }
  std::partial_sort(picks.begin(), picks.begin() + s.nodes, picks.end());
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < s.nodes; ++i) out.push_back(picks[i].second);
  return out;
}

}  // namespace baton::sched::internal
