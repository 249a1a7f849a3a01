#include "coordinator/scheduler/placement.h"

#include <algorithm>
#include <bit>

#include "absl/container/flat_hash_map.h"
#include "coordinator/scheduler/fit.h"
#include "coordinator/scheduler/topology.h"

namespace baton::sched::internal {

NodeIndex::NodeIndex(const Pass& pass) {
  for (const NodeHw& hw : pass.hw) max_gpus_ = std::max(max_gpus_, hw.gpu_count);
  buckets_.assign(pass.groups.size(), std::vector<std::set<uint32_t>>(max_gpus_ + 1));
  filled_.assign(max_gpus_ + 1, {});
  count_.assign(pass.hw.size(), 0);
  for (uint32_t i = 0; i < pass.hw.size(); ++i) {
    if (!pass.hw[i].schedulable) continue;
    count_[i] = static_cast<uint8_t>(FreeWhole(pass, i));
    Put(pass.hw[i].group, count_[i], i);
  }
}

void NodeIndex::Put(uint32_t group, uint32_t count, uint32_t node) {
  std::set<uint32_t>& bucket = buckets_[group][count];
  if (bucket.empty()) filled_[count].insert(group);
  bucket.insert(bucket.end(), node);
}

void NodeIndex::Take(uint32_t group, uint32_t count, uint32_t node) {
  std::set<uint32_t>& bucket = buckets_[group][count];
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
  count_[node] = now;
}

namespace {

// MIG gangs: the nodes with slices of the profile, fewest free slices first.
std::vector<uint32_t> FindMigNodes(Pass& pass, const Shape& s, int32_t class_value, JobId job) {
  std::vector<std::pair<uint32_t, uint32_t>> fits;  // free slices, node
  for (uint32_t node : pass.profile_nodes[s.profile]) {
    if (!Eligible(pass, s.filter, pass.hw[node].group) || !Usable(pass, node, class_value, job)) {
      continue;
    }
    NodeFree trial = pass.free[node];
    auto avail = static_cast<uint32_t>(std::popcount(KindMask(pass, node, trial, s)));
    if (FitNode(pass, node, trial, s, nullptr)) fits.emplace_back(avail, node);
  }
  if (fits.size() < s.nodes) return {};
  std::sort(fits.begin(), fits.end());
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < (s.topo_level >= 0 ? fits.size() : s.nodes); ++i) {
    out.push_back(fits[i].second);
  }
  return s.topo_level >= 0 ? ChooseByTopology(pass, s, out) : out;
}

// Per domain of the shape's level: its eligible nodes with the gang's GPUs free (summed
// from the index's buckets, no node visited). *unlabelled: some eligible group without
// the level's label has such nodes.
std::vector<uint32_t> FreeByDomain(Pass& pass, const NodeIndex& index, const Shape& s,
                                   bool* unlabelled) {
  const TopoLevel& level = pass.topo[s.topo_level];
  const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
  std::vector<uint32_t> free(level.names.size(), 0);
  *unlabelled = false;
  for (uint32_t count = s.gpus; count <= index.max_gpus(); ++count) {
    index.ForEachGroup(pass, s.filter, groups, count, [&](uint32_t g) {
      uint32_t d = level.group_domain[g];
      if (d == kNone) {
        *unlabelled = true;
      } else {
        free[d] += static_cast<uint32_t>(index.Bucket(g, count).size());
      }
      return false;
    });
  }
  return free;
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
                                      const std::vector<uint32_t>& free) {
  std::vector<std::pair<uint32_t, uint32_t>> order;  // free nodes, domain
  for (uint32_t d = 0; d < free.size(); ++d) {
    if (free[d] >= s.nodes) order.emplace_back(free[d], d);
  }
  std::sort(order.begin(), order.end());
  for (auto [unused, d] : order) {
    std::vector<uint32_t> out = FitInDomain(pass, index, s, d, s.nodes, class_value, job);
    if (out.size() == s.nodes) return out;
  }
  return {};
}

// A preferred gang no domain holds: the fewest domains (SpreadOver) by the same free
// counts, then each chosen domain's nodes checked. *fallback: a chosen domain had fewer
// nodes that fit than its count said (CPU, memory or NUMA), and the caller must look at
// every node instead.
std::vector<uint32_t> FindSpread(Pass& pass, const NodeIndex& index, const Shape& s,
                                 int32_t class_value, JobId job, const std::vector<uint32_t>& free,
                                 bool* fallback) {
  *fallback = false;
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
  size_t levels = pass.topo.size() - static_cast<size_t>(s.topo_level);
  std::vector<uint32_t> out;
  for (auto [i, take] : SpreadOver(sizes, parent, levels, s.nodes)) {
    std::vector<uint32_t> nodes = FitInDomain(pass, index, s, ids[i], take, class_value, job);
    if (nodes.size() < take) {
      *fallback = true;
      return {};
    }
    out.insert(out.end(), nodes.begin(), nodes.end());
  }
  return out;
}

}  // namespace

std::vector<uint32_t> FindNodes(Pass& pass, const NodeIndex& index, const Shape& s,
                                int32_t class_value, JobId job) {
  if (s.profile >= 0) return FindMigNodes(pass, s, class_value, job);
  if (s.topo_level >= 0) {
    bool unlabelled = false;
    std::vector<uint32_t> free = FreeByDomain(pass, index, s, &unlabelled);
    std::vector<uint32_t> one = FindInOneDomain(pass, index, s, class_value, job, free);
    if (!one.empty() || s.topo_required) return one;
    bool fallback = true;
    if (!unlabelled) {  // unlabelled nodes are domains of one each: the full look below
      std::vector<uint32_t> spread = FindSpread(pass, index, s, class_value, job, free, &fallback);
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

std::vector<uint32_t> PickReservation(Pass& pass, const NodeIndex& index, const Shape& s,
                                      int32_t class_value, JobId job) {
  std::vector<std::pair<uint64_t, uint32_t>> picks;  // (-free GPUs of its kind, node)
  auto consider = [&](uint32_t node) {
    if (!Usable(pass, node, class_value, job) || !HwFits(pass, node, s)) return;
    auto avail = static_cast<uint64_t>(std::popcount(KindMask(pass, node, pass.free[node], s)));
    picks.emplace_back(~avail, node);
  };
  if (s.profile >= 0) {
    for (uint32_t node : pass.profile_nodes[s.profile]) {
      if (Eligible(pass, s.filter, pass.hw[node].group)) consider(node);
    }
  } else {
    const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
    bool all = s.topo_level >= 0;
    for (uint32_t count = index.max_gpus() + 1; count-- > 0 && (all || picks.size() < s.nodes);) {
      index.ForEach(pass, s.filter, groups, count, [&](uint32_t node) {
        consider(node);
        return false;
      });
    }
  }
  if (picks.size() < s.nodes) return {};
  std::sort(picks.begin(), picks.end());
  std::vector<uint32_t> out;
  if (s.topo_level >= 0) {
    // One domain's nodes, the domain with the most free GPUs of the gang's kind among
    // those large enough; a preferred gang no domain holds reserves as any other.
    std::vector<uint32_t> sorted;
    absl::flat_hash_map<uint32_t, uint64_t> free_of;
    for (auto [inv, node] : picks) {
      sorted.push_back(node);
      free_of[node] = ~inv;
    }
    uint64_t most = 0;
    for (const std::vector<uint32_t>& dom : SplitByDomain(pass, s, sorted)) {
      if (dom.size() < s.nodes) continue;
      uint64_t sum = 0;
      for (uint32_t node : dom) sum += free_of[node];
      if (out.empty() || sum > most) {
        most = sum;
        out.assign(dom.begin(), dom.begin() + s.nodes);
      }
    }
    if (!out.empty() || s.topo_required) return out;
  }
  for (uint32_t i = 0; i < s.nodes; ++i) out.push_back(picks[i].second);
  return out;
}

}  // namespace baton::sched::internal
