#include "coordinator/scheduler/placement.h"

#include <algorithm>
#include <bit>

#include "coordinator/scheduler/fit.h"

namespace baton::sched::internal {

NodeIndex::NodeIndex(const Pass& pass) {
  for (const NodeHw& hw : pass.hw) max_gpus_ = std::max(max_gpus_, hw.gpu_count);
  buckets_.assign(pass.groups.size(), std::vector<std::set<uint32_t>>(max_gpus_ + 1));
  count_.assign(pass.hw.size(), 0);
  for (uint32_t i = 0; i < pass.hw.size(); ++i) {
    if (!pass.hw[i].schedulable) continue;
    count_[i] = static_cast<uint8_t>(FreeWhole(pass, i));
    buckets_[pass.hw[i].group][count_[i]].insert(buckets_[pass.hw[i].group][count_[i]].end(), i);
  }
}

uint32_t NodeIndex::FreeWhole(const Pass& pass, uint32_t node) {
  return static_cast<uint32_t>(std::popcount(pass.free[node].gpus & pass.hw[node].whole));
}

void NodeIndex::Update(const Pass& pass, uint32_t node) {
  if (!pass.hw[node].schedulable) return;
  auto now = static_cast<uint8_t>(FreeWhole(pass, node));
  if (now == count_[node]) return;
  auto& group = buckets_[pass.hw[node].group];
  group[count_[node]].erase(node);
  group[now].insert(node);
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
  for (uint32_t i = 0; i < s.nodes; ++i) out.push_back(fits[i].second);
  return out;
}

}  // namespace

std::vector<uint32_t> FindNodes(Pass& pass, const NodeIndex& index, const Shape& s,
                                int32_t class_value, JobId job) {
  if (s.profile >= 0) return FindMigNodes(pass, s, class_value, job);
  const std::vector<uint32_t>& groups = EligibleGroups(pass, s.filter);
  std::vector<uint32_t> out;
  for (uint32_t count = s.gpus; count <= index.max_gpus(); ++count) {
    for (uint32_t g : groups) {
      for (uint32_t node : index.Bucket(g, count)) {
        if (!Usable(pass, node, class_value, job)) continue;
        NodeFree trial = pass.free[node];
        if (!FitNode(pass, node, trial, s, nullptr)) continue;
        out.push_back(node);
        if (out.size() == s.nodes) return out;
      }
    }
  }
  return {};
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
    for (uint32_t count = index.max_gpus() + 1; count-- > 0 && picks.size() < s.nodes;) {
      for (uint32_t g : groups) {
        for (uint32_t node : index.Bucket(g, count)) consider(node);
      }
    }
  }
  if (picks.size() < s.nodes) return {};
  std::sort(picks.begin(), picks.end());
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < s.nodes; ++i) out.push_back(picks[i].second);
  return out;
}

}  // namespace baton::sched::internal
