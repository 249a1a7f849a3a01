#include "coordinator/scheduler/topology.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "coordinator/scheduler/fit.h"

namespace baton::sched::internal {
namespace {

using Members = std::vector<uint32_t>;  // candidate indices of one domain, in order

// The fewest of `doms` (indices into `sizes`) that hold n: the largest first, and the
// last one the smallest that covers what is left. Pairs of (domain, taken).
std::vector<std::pair<uint32_t, uint32_t>> Fewest(const std::vector<uint32_t>& sizes,
                                                  std::vector<uint32_t> doms, uint32_t n) {
  std::stable_sort(doms.begin(), doms.end(),
                   [&](uint32_t a, uint32_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::pair<uint32_t, uint32_t>> out;
  std::vector<bool> used(doms.size(), false);
  uint32_t left = n;
  while (left > 0) {
    size_t fit = doms.size();
    for (size_t i = 0; i < doms.size(); ++i) {
      if (!used[i] && sizes[doms[i]] >= left &&
          (fit == doms.size() || sizes[doms[i]] < sizes[doms[fit]])) {
        fit = i;
      }
    }
    if (fit != doms.size()) {
      out.emplace_back(doms[fit], left);
      return out;
    }
    size_t largest = 0;
    while (largest < doms.size() && used[largest]) ++largest;
    if (largest == doms.size() || sizes[doms[largest]] == 0) return {};
    used[largest] = true;
    out.emplace_back(doms[largest], sizes[doms[largest]]);
    left -= sizes[doms[largest]];
  }
  return out;
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> SpreadOver(
    const std::vector<uint32_t>& sizes, const std::function<uint32_t(size_t, uint32_t)>& parent,
    size_t levels, uint32_t n) {
  // Under the lowest common domain that holds the gang (the whole cluster last), the
  // fewest domains, then the smallest such parent.
  for (size_t k = 1; k <= levels; ++k) {
    std::vector<std::vector<uint32_t>> under;  // per parent, in order of first appearance
    std::vector<uint32_t> of(sizes.size());    // each domain's parent
    uint32_t top = 0;
    for (uint32_t d = 0; d < sizes.size(); ++d) {
      of[d] = k < levels ? parent(k, d) : 0;
      if (of[d] != kNone) top = std::max(top, of[d] + 1);
    }
    std::vector<uint32_t> slot(top, kNone);  // parent -> its index in `under`
    for (uint32_t d = 0; d < sizes.size(); ++d) {
      if (of[d] == kNone) continue;
      if (slot[of[d]] == kNone) {
        slot[of[d]] = static_cast<uint32_t>(under.size());
        under.emplace_back();
      }
      under[slot[of[d]]].push_back(d);
    }
    std::vector<std::pair<uint32_t, uint32_t>> chosen;
    std::tuple<size_t, size_t> score{SIZE_MAX, SIZE_MAX};
    for (const auto& group : under) {
      size_t total = 0, largest = 0;
      for (uint32_t d : group) {
        total += sizes[d];
        largest = std::max<size_t>(largest, sizes[d]);
      }
      if (total < n) continue;
      // It takes at least ceil(n / largest) domains: skip the parent when even that
      // cannot beat the best so far (Fewest sorts; most parents lose on this bound).
      std::tuple<size_t, size_t> bound{(n + largest - 1) / largest, total};
      if (!(bound < score)) continue;
      auto picks = Fewest(sizes, group, n);
      std::tuple<size_t, size_t> mine{picks.size(), total};
      if (!picks.empty() && mine < score) {
        score = mine;
        chosen = std::move(picks);
      }
    }
    if (!chosen.empty()) return chosen;
  }
  return {};
}

std::vector<uint32_t> PickDomains(const std::vector<std::vector<uint32_t>>& domains, uint32_t n,
                                  bool required) {
  if (domains.empty() || n == 0) return {};
  const std::vector<uint32_t>& own = domains[0];
  std::vector<Members> doms;  // in order of their first candidate
  absl::flat_hash_map<uint32_t, uint32_t> ids;
  for (uint32_t i = 0; i < own.size(); ++i) {
    if (own[i] == kNone) {
      if (!required) doms.push_back({i});
      continue;
    }
    auto [it, added] = ids.try_emplace(own[i], static_cast<uint32_t>(doms.size()));
    if (added) doms.emplace_back();
    doms[it->second].push_back(i);
  }
  // One domain: the fewest candidates that still suffice.
  size_t best = doms.size();
  for (size_t d = 0; d < doms.size(); ++d) {
    if (doms[d].size() >= n && (best == doms.size() || doms[d].size() < doms[best].size())) {
      best = d;
    }
  }
  if (best != doms.size()) return Members(doms[best].begin(), doms[best].begin() + n);
  if (required) return {};
  std::vector<uint32_t> sizes;
  for (const Members& m : doms) sizes.push_back(static_cast<uint32_t>(m.size()));
  auto parent = [&](size_t k, uint32_t d) { return domains[k][doms[d][0]]; };
  Members out;
  for (auto [d, take] : SpreadOver(sizes, parent, domains.size(), n)) {
    out.insert(out.end(), doms[d].begin(), doms[d].begin() + take);
  }
  return out;
}

std::vector<uint32_t> ChooseByTopology(const Pass& pass, const Shape& s,
                                       const std::vector<uint32_t>& nodes) {
  size_t levels = pass.topo.size() - static_cast<size_t>(s.topo_level);
  std::vector<std::vector<uint32_t>> domains(levels, std::vector<uint32_t>(nodes.size()));
  for (size_t k = 0; k < levels; ++k) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      domains[k][i] = DomainOf(pass, s.topo_level + static_cast<int32_t>(k), nodes[i]);
    }
  }
  std::vector<uint32_t> out;
  for (uint32_t i : PickDomains(domains, s.nodes, s.topo_required)) out.push_back(nodes[i]);
  return out;
}

std::vector<std::string> DomainNames(const Pass& pass, const Shape& s,
                                     const std::vector<uint32_t>& nodes) {
  std::vector<std::string> out;
  if (s.topo_level < 0) return out;
  const TopoLevel& level = pass.topo[s.topo_level];
  for (uint32_t node : nodes) {
    uint32_t d = DomainOf(pass, s.topo_level, node);
    std::string name = d == kNone ? pass.view.nodes[node].name + " (no " +
                                        pass.policy.topology_levels[s.topo_level].name + ")"
                                  : level.names[d];
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

uint32_t MinDomains(Pass& pass, const Shape& s) {
  if (s.topo_level < 0 || s.topo_required) return 1;
  uint32_t largest = std::max(LargestDomain(pass, s), 1u);  // unlabelled: domains of one
  return (s.nodes + largest - 1) / largest;
}

uint32_t LargestDomain(Pass& pass, const Shape& s) {
  if (pass.shape_min_domains.empty()) pass.shape_min_domains.assign(pass.shapes.size(), -1);
  int64_t& known = pass.shape_min_domains[s.id];
  if (known >= 0) return static_cast<uint32_t>(known);
  // Counted per (group, hardware class), no node visited: a group lies in one domain.
  const TopoLevel& level = pass.topo[s.topo_level];
  const size_t hws = pass.hw_rep.size();
  std::vector<bool> hw_fits(hws);
  for (uint32_t h = 0; h < hws; ++h) hw_fits[h] = HwFits(pass, pass.hw_rep[h], s);
  std::vector<uint32_t> size(level.names.size(), 0);
  uint32_t largest = 0;
  for (uint32_t g : EligibleGroups(pass, s.filter)) {
    uint32_t d = level.group_domain[g];
    if (d == kNone) continue;
    for (uint32_t h = 0; h < hws; ++h) {
      if (hw_fits[h]) size[d] += pass.hw_group_schedulable[g * hws + h];
    }
    largest = std::max(largest, size[d]);
  }
  known = largest;
  return largest;
}

}  // namespace baton::sched::internal
