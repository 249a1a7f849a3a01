// BuildPass, nodes part: groups, hardware classes, GPU entries and NUMA domains.
#include <algorithm>
#include <bit>
#include <string>

#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {
namespace {

uint32_t Intern(absl::flat_hash_map<std::string, uint32_t>& ids, std::string key, size_t next) {
  return ids.try_emplace(std::move(key), static_cast<uint32_t>(next)).first->second;
}

uint16_t InternName(std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return static_cast<uint16_t>(it - names.begin());
  names.push_back(name);
  return static_cast<uint16_t>(names.size() - 1);
}

std::string GroupKey(const std::string& pool, const NodeInfo& n) {
  std::string key = pool;
  key += '\0';
  for (const auto& [k, v] : n.labels) key += k + '=' + v + '\0';
  key += '\1';
  for (const auto& t : n.taints) key += t.key + '=' + t.value + ':' + t.effect + '\0';
  return key;
}

// Entries that share a physical GPU (MIG slices and their parent); a whole GPU that is
// some slice's parent never goes out whole.
void BuildPhysical(Pass& pass, const NodeInfo& n, NodeHw& hw) {
  auto phys = [&](uint32_t e) -> const std::string& {
    return n.gpus[e].mig_profile.empty() ? n.gpus[e].uuid : n.gpus[e].parent_uuid;
  };
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    uint64_t mask = 0;
    for (uint32_t o = 0; o < hw.gpu_count; ++o) {
      if (phys(o) == phys(e)) mask |= uint64_t{1} << o;
    }
    pass.entry_phys[hw.gpu_base + e] = mask;
    if (!n.gpus[e].mig_profile.empty()) hw.whole &= ~(mask & hw.whole);
    if (std::popcount(mask) > 1) hw.mps &= ~(uint64_t{1} << e);  // a MIG GPU is never a pool
  }
}

// GPU entries: profile, model and physical-GPU masks; whole GPUs that may go out whole;
// MPS pools (of the kind kMpsShareKind, never whole, never with MIG) and their capacity.
void BuildEntries(Pass& pass, const NodeInfo& n, NodeHw& hw, NodeFree& cap) {
  hw.gpu_base = static_cast<uint32_t>(pass.entry_profile.size());
  hw.gpu_count = static_cast<uint32_t>(std::min<size_t>(n.gpus.size(), kMaxGpus));
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    const GpuInfo& g = n.gpus[e];
    bool slice = !g.mig_profile.empty();
    bool pool = g.mps && !slice && std::popcount(hw.mps) < static_cast<int>(kMaxMps);
    hw.has_mig |= slice;
    const std::string& kind = slice ? g.mig_profile : kMpsShareKind;
    pass.entry_profile.push_back(slice || pool ? InternName(pass.profiles, kind) + 1 : 0);
    pass.entry_model.push_back(InternName(pass.models, g.model));
    pass.entry_phys.push_back(uint64_t{1} << e);
    if (pool) {
      hw.mps |= uint64_t{1} << e;
    } else if (!slice) {
      hw.whole |= uint64_t{1} << e;
    }
  }
  if (hw.has_mig) BuildPhysical(pass, n, hw);
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    if (!(hw.mps >> e & 1)) {
      if (pass.entry_profile[hw.gpu_base + e] && n.gpus[e].mig_profile.empty()) {
        pass.entry_profile[hw.gpu_base + e] = 0;  // offered as a pool, but a MIG parent
      }
      continue;
    }
    ShareFree& pool = cap.share[ShareSlot(hw, e)];
    pool.units = kShareUnits;
    pool.mem_mib = static_cast<uint32_t>(std::min<uint64_t>(n.gpus[e].memory_bytes >> 20, ~0u));
  }
}

// NUMA slots: the node's NUMA nodes when every GPU names one of them, else one domain.
void BuildNuma(const NodeInfo& n, NodeHw& hw, NodeFree& cap) {
  uint64_t all = hw.gpu_count == 64 ? ~uint64_t{0} : (uint64_t{1} << hw.gpu_count) - 1;
  bool aware = !n.numa.empty() && n.numa.size() <= kMaxNuma;
  for (uint32_t e = 0; aware && e < hw.gpu_count; ++e) {
    aware = std::any_of(n.numa.begin(), n.numa.end(),
                        [&](const NumaInfo& m) { return m.id == n.gpus[e].numa; });
  }
  hw.numa_aware = aware;
  hw.smt = std::max(n.smt, uint32_t{1});
  uint32_t offset = 0;
  if (!aware) {
    for (const auto& m : n.numa) offset += static_cast<uint32_t>(m.cpus.size());
    hw.numa_count = 1;
    hw.numa_id[0] = -1;
    hw.numa_gpus[0] = all;
    hw.numa_cpu_offset[1] = offset;
    uint32_t cores = offset ? offset : static_cast<uint32_t>(n.cpu_millis / 1000);
    cap.numa[0] = NumaFree{n.cpu_millis, n.memory_bytes, cores, 0};
    return;
  }
  hw.numa_count = static_cast<uint32_t>(n.numa.size());
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    const NumaInfo& m = n.numa[k];
    hw.numa_id[k] = m.id;
    for (uint32_t e = 0; e < hw.gpu_count; ++e) {
      if (n.gpus[e].numa == m.id) hw.numa_gpus[k] |= uint64_t{1} << e;
    }
    auto cores = static_cast<uint32_t>(m.cpus.size());
    cap.numa[k] = NumaFree{uint64_t{cores} * 1000, m.memory_bytes, cores, 0};
    offset += cores;
    hw.numa_cpu_offset[k + 1] = offset;
  }
}

std::string HwKey(const Pass& pass, const NodeHw& hw, const NodeFree& cap) {
  std::string key;
  auto put = [&key](uint64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(hw.numa_aware);
  put(hw.numa_count);
  put(hw.smt);
  put(hw.whole);
  put(hw.mps);
  for (int k = 0; k < std::popcount(hw.mps); ++k) put(cap.share[k].mem_mib);
  put(cap.millis);
  put(cap.mem);
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    put(hw.numa_gpus[k]);
    put(cap.numa[k].millis);
    put(cap.numa[k].mem);
    put(cap.numa[k].cores);
  }
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    put(pass.entry_profile[hw.gpu_base + e]);
    put(pass.entry_model[hw.gpu_base + e]);
    put(pass.entry_phys[hw.gpu_base + e]);
  }
  return key;
}

// Per level, each group's domain: keyed by the label values from the top level down to
// it, so that two leaves named alike under different spines stay apart.
void BuildTopology(Pass& pass) {
  const auto& levels = pass.policy.topology_levels;
  pass.topo.assign(levels.size(), TopoLevel{});
  std::vector<std::string> path(pass.groups.size());
  std::vector<uint32_t> above(pass.groups.size(), kNone);
  for (size_t l = levels.size(); l-- > 0;) {
    TopoLevel& level = pass.topo[l];
    absl::flat_hash_map<std::string, uint32_t> ids;
    level.group_domain.assign(pass.groups.size(), kNone);
    for (uint32_t g = 0; g < pass.groups.size(); ++g) {
      const auto& labels = pass.view.nodes[pass.groups[g].first_node].labels;
      auto it = labels.find(levels[l].label);
      path[g] += '\0';
      if (it == labels.end()) {
        above[g] = kNone;
        continue;
      }
      path[g] += it->second;
      uint32_t id = Intern(ids, path[g], level.names.size());
      if (id == level.names.size()) {
        level.names.push_back(it->second);
        level.parent.push_back(above[g]);
        level.groups.emplace_back();
      }
      level.groups[id].push_back(g);
      level.group_domain[g] = id;
      above[g] = id;
    }
  }
}

}  // namespace

Amount BuildNodes(Pass& pass) {
  const auto& nodes = pass.view.nodes;
  absl::flat_hash_map<std::string, uint32_t> group_ids, hw_ids;
  pass.hw.resize(nodes.size());
  pass.free.resize(nodes.size());
  pass.reserved.assign(nodes.size(), NodeReservation{});
  pass.cores_taken.resize(nodes.size());
  Amount capacity;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const NodeInfo& n = nodes[i];
    NodeHw& hw = pass.hw[i];
    NodeFree cap;
    hw.schedulable = n.schedulable;
    BuildEntries(pass, n, hw, cap);
    BuildNuma(n, hw, cap);
    cap.millis = n.cpu_millis;
    cap.mem = n.memory_bytes;
    cap.gpus = hw.gpu_count == 64 ? ~uint64_t{0} : (uint64_t{1} << hw.gpu_count) - 1;
    std::string pool = NormalPool(pass, n.pool);
    hw.group = Intern(group_ids, GroupKey(pool, n), pass.groups.size());
    if (hw.group == pass.groups.size()) pass.groups.push_back(Group{pool, i, {}});
    pass.groups[hw.group].nodes.push_back(i);
    hw.hw = Intern(hw_ids, HwKey(pass, hw, cap), pass.hw_rep.size());
    if (hw.hw == pass.hw_rep.size()) {
      pass.hw_rep.push_back(i);
      pass.hw_capacity.push_back(cap);
    }
    pass.free[i] = cap;
    if (n.schedulable) capacity += NodeCapacity(pass, i);
  }
  IndexProfilesAndClasses(pass);
  BuildTopology(pass);
  return capacity;
}

Amount NodeCapacity(const Pass& pass, uint32_t node) {
  const NodeHw& hw = pass.hw[node];
  const NodeInfo& n = pass.view.nodes[node];
  uint64_t slices = 0;
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    if (pass.entry_profile[hw.gpu_base + e]) slices |= uint64_t{1} << e;
  }
  return Amount{static_cast<uint64_t>(std::popcount(hw.whole | slices | hw.mps)) * kGpuUnits,
                n.cpu_millis, n.memory_bytes};
}

void SetSchedulable(Pass& pass, uint32_t node, bool schedulable) {
  NodeHw& hw = pass.hw[node];
  if (hw.schedulable == schedulable) return;
  hw.schedulable = schedulable;
  uint32_t& count = pass.hw_group_schedulable[hw.group * pass.hw_rep.size() + hw.hw];
  schedulable ? ++count : --count;
  if (!(hw.has_mig || hw.mps)) return;
  std::vector<bool> seen(pass.profiles.size(), false);
  for (uint32_t e = 0; e < hw.gpu_count; ++e) {
    uint16_t p = pass.entry_profile[hw.gpu_base + e];
    if (!p || seen[p - 1]) continue;
    seen[p - 1] = true;
    std::vector<uint32_t>& nodes = pass.profile_nodes[p - 1];  // ascending
    auto at = std::lower_bound(nodes.begin(), nodes.end(), node);
    if (schedulable) {
      nodes.insert(at, node);
    } else if (at != nodes.end() && *at == node) {
      nodes.erase(at);
    }
  }
}

void IndexProfilesAndClasses(Pass& pass) {
  size_t hws = pass.hw_rep.size();
  pass.hw_group_count.assign(pass.groups.size() * hws, 0);
  pass.hw_group_schedulable.assign(pass.groups.size() * hws, 0);
  pass.profile_nodes.assign(pass.profiles.size(), {});
  for (uint32_t i = 0; i < pass.hw.size(); ++i) {
    const NodeHw& hw = pass.hw[i];
    ++pass.hw_group_count[hw.group * hws + hw.hw];
    if (hw.schedulable) ++pass.hw_group_schedulable[hw.group * hws + hw.hw];
    if (!hw.schedulable || !(hw.has_mig || hw.mps)) continue;
    std::vector<bool> seen(pass.profiles.size(), false);
    for (uint32_t e = 0; e < hw.gpu_count; ++e) {
      uint16_t p = pass.entry_profile[hw.gpu_base + e];
      if (p && !seen[p - 1]) {
        seen[p - 1] = true;
        pass.profile_nodes[p - 1].push_back(i);
      }
    }
  }
}

}  // namespace baton::sched::internal
