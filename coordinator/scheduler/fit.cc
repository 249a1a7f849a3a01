#include "coordinator/scheduler/fit.h"

#include <algorithm>
#include <bit>

namespace baton::sched::internal {
namespace {

uint64_t Lowest(uint64_t mask, uint32_t n) {
  uint64_t out = 0;
  for (uint32_t i = 0; i < n && mask; ++i) {
    uint64_t bit = mask & (~mask + 1);
    out |= bit;
    mask &= mask - 1;
  }
  return out;
}

uint32_t Count(uint64_t mask) { return static_cast<uint32_t>(std::popcount(mask)); }

// What one rank group of the shape holds of its NUMA slot on this node. Inference holds
// whole cores: on an SMT node its CPUs round up to whole cores (no sibling left to
// training, which would share the core's caches and pipelines), and its slot is charged
// for them, as a held rank's CPUs are charged (pass_state.cc). The node's own total and
// the job's quota count its request, as Kubernetes counts requests.
uint32_t GroupCores(const NodeHw& hw, const Shape& s) {
  return hw.smt == 1 ? s.group_cores : WholeCoreCpus(hw, s.group_cores);  // the common case
}
uint64_t GroupMillis(const NodeHw& hw, const Shape& s) {
  return s.group_millis + uint64_t{GroupCores(hw, s) - s.group_cores} * 1000;
}

// Whether a pool has room for the share shape: its units, its memory, and no other
// user's shares (an MPS server runs as one uid).
bool ShareFits(const ShareFree& pool, const Shape& s) {
  return pool.units >= s.share && pool.mem_mib >= s.share_mem_mib &&
         (pool.owner == 0 || pool.owner == s.owner);
}

// The pool among `mask` the share leaves least of (units, then memory; best fit keeps
// whole pools whole for bigger shares), lowest entry on ties. Pools are walked in entry
// order beside their index in NodeFree::share.
uint64_t BestPool(const NodeHw& hw, const NodeFree& f, const Shape& s, uint64_t mask) {
  uint64_t best = 0;
  std::pair<uint32_t, uint32_t> least{~0u, ~0u};
  uint32_t k = 0;
  for (uint64_t rest = hw.mps; rest; rest &= rest - 1, ++k) {
    const uint64_t bit = rest & (~rest + 1);
    if (!(mask & bit)) continue;
    const ShareFree& pool = f.share[k];
    std::pair<uint32_t, uint32_t> left{pool.units - s.share, pool.mem_mib - s.share_mem_mib};
    if (left < least) {
      least = left;
      best = bit;
    }
  }
  return best;
}

// The entries a rank group takes among `mask`: `n` of them, or one pool for a share.
uint64_t Pick(const NodeHw& hw, const NodeFree& f, const Shape& s, uint64_t mask, uint32_t n) {
  return s.share ? BestPool(hw, f, s, mask) : Lowest(mask, n);
}

void TakeGpus(const NodeHw& hw, NodeFree& f, uint64_t take, const Shape& s) {
  if (s.share) {  // a pool's bit stays set: the share is counted off what is left of it
    ShareFree& pool = f.share[ShareSlot(hw, static_cast<uint32_t>(std::countr_zero(take)))];
    pool.units = static_cast<uint8_t>(pool.units - s.share);
    pool.mem_mib -= s.share_mem_mib;
    pool.owner = s.owner;
    ++pool.shares;
    return;
  }
  f.gpus &= ~take;
  (s.service ? f.service_held : f.training_held) |= take;
}

// Whether the policy's inference_numa_exclusive keeps the shape off NUMA node `n`: one
// kind of job never goes where the other is.
bool Excluded(const NumaFree& n, const Shape& s) {
  return s.numa_exclusive && (s.service ? n.training_ranks > 0 : n.service_ranks > 0);
}

// The slot a rank group goes to: room for it, not excluded, away from inference
// (training), fewest free GPUs (best fit), lowest slot.
int32_t PickSlot(const NodeHw& hw, const NodeFree& f, const Shape& s, uint64_t mask) {
  const uint32_t cores = GroupCores(hw, s);
  const uint64_t millis = GroupMillis(hw, s);
  int32_t best = -1;
  uint32_t best_avail = 0;
  bool best_shared = true;
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    const NumaFree& n = f.numa[k];
    uint32_t avail = Count(mask & hw.numa_gpus[k]);
    if (avail < s.group_gpus || n.millis < millis || n.mem < s.group_mem || n.cores < cores ||
        Excluded(n, s)) {
      continue;
    }
    bool shared = !s.service && n.service_ranks > 0;
    if (best < 0 || shared < best_shared || (shared == best_shared && avail < best_avail)) {
      best = static_cast<int32_t>(k);
      best_avail = avail;
      best_shared = shared;
    }
  }
  return best;
}

bool FitAligned(const NodeHw& hw, NodeFree& f, const Shape& s, uint64_t mask, NodeChoice* c) {
  for (uint32_t g = 0; g < s.groups; ++g) {
    int32_t k = PickSlot(hw, f, s, mask);
    if (k < 0) return false;
    uint64_t take = Pick(hw, f, s, mask & hw.numa_gpus[k], s.group_gpus);
    mask &= ~take;
    TakeGpus(hw, f, take, s);
    NumaFree& n = f.numa[k];
    n.millis -= GroupMillis(hw, s);
    n.mem -= s.group_mem;
    n.cores -= GroupCores(hw, s);
    (s.service ? n.service_ranks : n.training_ranks) += 1;
    if (c) c->groups.emplace_back(static_cast<uint8_t>(k), take);
  }
  return true;
}

// Ranks spread over the NUMA nodes: only where the hardware cannot align them.
bool FitSpread(const NodeHw& hw, NodeFree& f, const Shape& s, uint64_t mask, NodeChoice* c) {
  uint32_t cores = GroupCores(hw, s) * s.groups;
  uint32_t free_cores = 0;
  for (uint32_t k = 0; k < hw.numa_count; ++k) free_cores += f.numa[k].cores;
  if (free_cores < cores) return false;
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    if (Excluded(f.numa[k], s)) return false;  // a spanning rank is on every NUMA node
  }
  uint64_t take = Pick(hw, f, s, mask, s.gpus);
  TakeGpus(hw, f, take, s);
  // Evenly over the NUMA nodes, as a held spanning rank is charged (pass_state.cc).
  uint32_t slots = hw.numa_count;
  const uint64_t millis = s.cpu + uint64_t{GroupCores(hw, s) - s.group_cores} * s.groups * 1000;
  for (uint32_t k = 0; k < slots; ++k) {
    NumaFree& n = f.numa[k];
    uint64_t m = millis / slots + (k == 0 ? millis % slots : 0);
    uint64_t b = s.mem / slots + (k == 0 ? s.mem % slots : 0);
    uint32_t x = std::min(cores, n.cores);
    n.millis -= std::min(m, n.millis);
    n.mem -= std::min(b, n.mem);
    n.cores -= x;
    cores -= x;
    (s.service ? n.service_ranks : n.training_ranks) += 1;
  }
  if (c) c->groups.emplace_back(kSpan, take);
  return true;
}

// Memoized per (hardware class, shape): bit 0 the empty node aligns every rank group,
// bit 1 the empty node holds the shape at all.
int8_t HwVerdict(Pass& pass, uint32_t node, const Shape& s) {
  const NodeHw& hw = pass.hw[node];
  uint64_t key = (uint64_t{hw.hw} << 32) | s.id;
  auto [it, added] = pass.alignable.try_emplace(key, 0);
  if (!added) return it->second;
  const NodeFree& cap = pass.hw_capacity[hw.hw];
  uint64_t mask = KindMask(pass, pass.hw_rep[hw.hw], cap, s);
  int8_t v = 0;
  if (cap.millis >= s.cpu && cap.mem >= s.mem && Count(mask) >= s.gpus) {
    NodeFree a = cap, b = cap;
    if (FitAligned(hw, a, s, mask, nullptr))
      v = 3;
    else if (FitSpread(hw, b, s, mask, nullptr))
      v = 2;
  }
  it->second = v;
  return v;
}

// Exclusive CPUs for an inference rank group: `n` CPUs as whole free cores of its slot
// (every SMT sibling of each), from the highest CPU down, as the agent would pick: CPU 0
// and its neighbours carry the system's own work (interrupts, daemons). Only when too few
// whole cores are free (a core split by an older coordinator's placement) does it take
// single free CPUs, and the agent then picks its own. Returned core by core (each core's
// CPUs together, cores by their lowest CPU), so that splitting them over ranks in order
// (SplitGroup) never splits a core.
std::vector<uint32_t> PickCores(Pass& pass, uint32_t node, uint8_t slot, uint32_t n) {
  const NodeHw& hw = pass.hw[node];
  const auto& numa = pass.view.nodes[node].numa;
  std::vector<uint8_t>& taken = pass.cores_taken[node];
  uint32_t total = hw.numa_cpu_offset[hw.numa_count];
  if (taken.empty()) taken.assign(total, 0);
  uint32_t begin = slot == kSpan ? 0 : hw.numa_cpu_offset[slot];
  uint32_t end = slot == kSpan ? total : hw.numa_cpu_offset[slot + 1];
  // Each position of the concatenated list: its CPU and its core. Computed where needed
  // (this runs at every inference commit; no table is built for it).
  auto at = [&numa](uint32_t pos) {
    size_t m = 0;
    while (pos >= numa[m].cpus.size()) pos -= static_cast<uint32_t>(numa[m++].cpus.size());
    return std::pair<uint32_t, uint32_t>{numa[m].cpus[pos], CoreOf(numa[m], pos)};
  };
  std::vector<std::vector<uint32_t>> picked;  // CPUs, core by core
  std::vector<uint32_t> core;                 // the positions of one core
  size_t count = 0;
  for (bool whole : {true, false}) {
    for (uint32_t pos = end; pos-- > begin && count < n;) {
      if (taken[pos]) continue;
      core.clear();
      if (whole && hw.smt > 1) {  // its SMT siblings in the slot, in position order
        const uint32_t id = at(pos).second;
        for (uint32_t p = begin; p < end; ++p) {
          if (at(p).second == id) core.push_back(p);
        }
      } else {
        core.push_back(pos);
      }
      if (std::any_of(core.begin(), core.end(), [&](uint32_t p) { return taken[p]; })) continue;
      picked.emplace_back();
      for (uint32_t p : core) {
        taken[p] = 1;
        picked.back().push_back(at(p).first);
      }
      std::sort(picked.back().begin(), picked.back().end());
      count += core.size();
    }
  }
  std::sort(picked.begin(), picked.end());
  std::vector<uint32_t> out;
  for (const auto& core : picked) out.insert(out.end(), core.begin(), core.end());
  return out;
}

std::vector<uint32_t> Entries(uint64_t mask) {
  std::vector<uint32_t> out;
  for (; mask; mask &= mask - 1) out.push_back(static_cast<uint32_t>(std::countr_zero(mask)));
  return out;
}

}  // namespace

uint64_t KindMask(const Pass& pass, uint32_t node, const NodeFree& f, const Shape& s) {
  const NodeHw& hw = pass.hw[node];
  uint64_t m = hw.whole;
  if (s.profile >= 0) {
    m = 0;
    for (uint32_t e = 0; e < hw.gpu_count; ++e) {
      if (pass.entry_profile[hw.gpu_base + e] == s.profile + 1) m |= uint64_t{1} << e;
    }
  }
  if (s.model >= 0) {
    const std::vector<bool>& match = pass.model_match[s.model];
    for (uint64_t rest = m; rest; rest &= rest - 1) {
      uint32_t e = static_cast<uint32_t>(std::countr_zero(rest));
      if (!match[pass.entry_model[hw.gpu_base + e]]) m &= ~(uint64_t{1} << e);
    }
  }
  if (hw.has_mig) {
    uint64_t other = s.service ? f.training_held : f.service_held;
    for (; other; other &= other - 1) {
      m &= ~pass.entry_phys[hw.gpu_base + std::countr_zero(other)];
    }
  }
  m &= f.gpus;
  if (s.share) {
    m &= hw.mps;
    uint32_t k = 0;
    for (uint64_t rest = hw.mps; rest && m; rest &= rest - 1, ++k) {
      const uint64_t bit = rest & (~rest + 1);
      if ((m & bit) && !ShareFits(f.share[k], s)) m &= ~bit;
    }
  }
  return m;
}

bool FitNode(Pass& pass, uint32_t node, NodeFree& f, const Shape& s, NodeChoice* c) {
  if (f.millis < s.cpu || f.mem < s.mem) return false;
  uint64_t mask = KindMask(pass, node, f, s);
  if (Count(mask) < s.gpus) return false;
  const NodeHw& hw = pass.hw[node];
  NodeFree trial = f;
  bool ok = FitAligned(hw, trial, s, mask, c);
  if (!ok && !(HwVerdict(pass, node, s) & 1)) {
    if (c) c->groups.clear();
    trial = f;
    ok = FitSpread(hw, trial, s, mask, c);
  }
  if (!ok) return false;
  f = trial;
  f.millis -= s.cpu;
  f.mem -= s.mem;
  return true;
}

bool HwFits(Pass& pass, uint32_t node, const Shape& s) { return HwVerdict(pass, node, s) & 2; }

// One rank group shared by every rank (a spanning or uneven gang member): GPUs split
// evenly when they divide, exclusive cores always split, so no two ranks share a core
// (PickCores lists them core by core; each rank's part is whole cores when the cores
// divide evenly, as they do for groups of whole cores per rank).
static std::vector<RankBinding> SplitGroup(const RankBinding& group, uint32_t ranks) {
  std::vector<RankBinding> out(ranks, group);
  bool even = !group.gpus.empty() && group.gpus.size() % ranks == 0;
  size_t per = group.gpus.size() / ranks;
  for (uint32_t r = 0; r < ranks; ++r) {
    if (even) {
      out[r].gpus.assign(group.gpus.begin() + r * per, group.gpus.begin() + (r + 1) * per);
    }
    size_t n = group.cpus.size();
    out[r].cpus.assign(group.cpus.begin() + r * n / ranks,
                       group.cpus.begin() + (r + 1) * n / ranks);
    std::sort(out[r].cpus.begin(), out[r].cpus.end());
  }
  return out;
}

NodePlacement CommitNode(Pass& pass, uint32_t node, const Shape& s) {
  NodeChoice c;
  FitNode(pass, node, pass.free[node], s, &c);
  const NodeHw& hw = pass.hw[node];
  NodePlacement p;
  p.node = node;
  p.cpu_millis = s.cpu;
  p.memory_bytes = s.mem;
  uint64_t all = 0;
  for (const auto& [slot, mask] : c.groups) {
    RankBinding b;
    b.numa = slot == kSpan || !hw.numa_aware ? -1 : hw.numa_id[slot];
    b.gpus = Entries(mask);
    if (s.service) {
      b.cpus = PickCores(pass, node, slot, GroupCores(hw, s) * (slot == kSpan ? s.groups : 1));
    }
    all |= mask;
    p.ranks.push_back(std::move(b));
  }
  p.gpus = Entries(all);
  p.gpu_share_percent = s.share;
  p.gpu_memory_bytes = uint64_t{s.share_mem_mib} << 20;
  if (p.ranks.size() != s.ranks) p.ranks = SplitGroup(p.ranks.front(), s.ranks);
  return p;
}

}  // namespace baton::sched::internal
