// BuildPass: classes, tenants, running gangs (their holds applied to the nodes), quotas
// and pending jobs interned into shapes.
#include "coordinator/scheduler/pass_state.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <tuple>

namespace baton::sched::internal {
namespace {

uint64_t Sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint32_t TenantId(Pass& pass, const std::string& name) {
  auto [it, added] = pass.tenant_ids.try_emplace(name, pass.tenant_names.size());
  if (added) pass.tenant_names.push_back(name);
  return it->second;
}

// A user of MPS shares as ShareFree::owner: 1 and up (0 is no owner).
uint16_t UserId(Pass& pass, const std::string& name) {
  auto [it, added] = pass.user_ids.try_emplace(name, 0);
  if (added) it->second = static_cast<uint16_t>(std::min<size_t>(pass.user_ids.size(), 0xffff));
  return it->second;
}

uint32_t MiB(uint64_t bytes) {
  return static_cast<uint32_t>(std::min<uint64_t>(CeilDiv(bytes, 1 << 20), ~0u));
}

uint32_t ClassId(const Pass& pass, const std::string& name) {
  auto it = pass.class_ids.find(name);
  return it == pass.class_ids.end() ? kNone : it->second;
}

int32_t SlotOf(const NodeHw& hw, int32_t numa) {
  if (!hw.numa_aware) return 0;
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    if (hw.numa_id[k] == numa) return static_cast<int32_t>(k);
  }
  return -1;
}

// Charges a rank that spans NUMA nodes evenly to all of them: the same charge whatever
// order the gangs come in.
void Spread(const NodeHw& hw, uint64_t millis, uint64_t mem, Hold& h) {
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    h.numa_millis[k] += millis / hw.numa_count + (k == 0 ? millis % hw.numa_count : 0);
    h.numa_mem[k] += mem / hw.numa_count + (k == 0 ? mem % hw.numa_count : 0);
    ++h.numa_ranks[k];
  }
}

// Exclusive cores an inference rank holds: marked taken and counted off their slots (or,
// when the rank names none, as many cores as its CPU share counted off its slot). Its
// slots are marked as inference's (all of them for a rank that spans).
void TakeCores(Pass& pass, uint32_t node, int32_t slot, const HeldRank& rank, uint64_t millis) {
  const NodeHw& hw = pass.hw[node];
  const auto& numa = pass.view.nodes[node].numa;
  NodeFree& free = pass.free[node];
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    if (slot < 0 || static_cast<uint32_t>(slot) == k) ++free.numa[k].service_ranks;
  }
  if (rank.cpus.empty()) {
    auto n = static_cast<uint32_t>(CeilDiv(millis, 1000));
    if (slot >= 0) free.numa[slot].cores -= std::min(free.numa[slot].cores, n);
    return;
  }
  std::vector<uint8_t>& taken = pass.cores_taken[node];
  if (taken.empty()) taken.assign(hw.numa_cpu_offset[hw.numa_count], 0);
  for (uint32_t cpu : rank.cpus) {
    size_t pos = 0;
    for (uint32_t m = 0; m < numa.size(); pos += numa[m].cpus.size(), ++m) {
      auto it = std::find(numa[m].cpus.begin(), numa[m].cpus.end(), cpu);
      if (it == numa[m].cpus.end()) continue;
      size_t at = pos + static_cast<size_t>(it - numa[m].cpus.begin());
      uint32_t k = hw.numa_aware ? m : 0;
      if (at < taken.size() && !taken[at]) {
        taken[at] = 1;
        if (free.numa[k].cores > 0) --free.numa[k].cores;
      }
      break;
    }
  }
}

// The entries of the node that the held uuids name.
uint64_t HeldGpus(const NodeHw& hw, const NodeInfo& info, const HeldNode& held) {
  uint64_t mask = 0;
  uint32_t from = 0;  // held GPUs usually come in entry order: start after the last one
  for (const auto& uuid : held.gpu_uuids) {
    for (uint32_t k = 0; k < hw.gpu_count; ++k) {
      uint32_t e = (from + k) % hw.gpu_count;
      if (info.gpus[e].uuid != uuid) continue;
      mask |= uint64_t{1} << e;
      from = e + 1;
      break;
    }
  }
  return mask;
}

// Each rank's share charged to its NUMA node (all of them, evenly, for a spanning rank);
// inference ranks take their exclusive cores.
void ChargeRanks(Pass& pass, uint32_t node, const HeldNode& held, Hold& h) {
  const NodeHw& hw = pass.hw[node];
  uint64_t n = held.ranks.size();
  for (const auto& r : held.ranks) {
    int32_t slot = r.numa < 0 ? -1 : SlotOf(hw, r.numa);
    uint64_t millis = std::max(CeilDiv(h.millis, n), h.service ? r.cpus.size() * 1000 : 0);
    if (slot < 0) {
      Spread(hw, millis, CeilDiv(h.mem, n), h);
    } else {
      h.numa_millis[slot] += millis;
      h.numa_mem[slot] += CeilDiv(h.mem, n);
      ++h.numa_ranks[slot];
    }
    if (h.service) TakeCores(pass, node, slot, r, millis);
  }
}

// `gpus`: the entries the held uuids name (HeldGpus).
Hold MakeHold(Pass& pass, uint32_t node, uint64_t gpus, const HeldNode& held, bool service) {
  const NodeHw& hw = pass.hw[node];
  Hold h;
  h.node = node;
  h.numa_count = static_cast<uint8_t>(hw.numa_count);
  h.millis = held.cpu_millis;
  h.mem = held.memory_bytes;
  h.service = service;
  h.gpus = gpus;
  if (held.gpu_share_percent > 0 && (h.gpus & hw.mps) != 0) {  // a share of one pool
    uint64_t pools = h.gpus & hw.mps;
    h.gpus = pools & (~pools + 1);
    h.share_slot =
        static_cast<uint8_t>(ShareSlot(hw, static_cast<uint32_t>(std::countr_zero(h.gpus))));
    h.share = static_cast<uint8_t>(std::min(held.gpu_share_percent, kShareUnits));
    h.share_mem_mib = MiB(held.gpu_memory_bytes);
  }
  if (!held.ranks.empty()) {
    ChargeRanks(pass, node, held, h);
    return h;
  }
  for (uint32_t k = 0; k < hw.numa_count; ++k) {
    if (h.gpus && (h.gpus & ~hw.numa_gpus[k]) == 0) {
      h.numa_millis[k] = h.millis;
      h.numa_mem[k] = h.mem;
      h.numa_ranks[k] = 1;
      if (service) ++pass.free[node].numa[k].service_ranks;
      return h;
    }
  }
  Spread(hw, h.millis, h.mem, h);
  return h;
}

// The holds of each node, in gang order, as one flat array.
void IndexHolds(Pass& pass) {
  std::vector<uint32_t>& begin = pass.node_hold_begin;
  begin.assign(pass.view.nodes.size() + 1, 0);
  for (const Hold& h : pass.holds) ++begin[h.node + 1];
  for (size_t i = 1; i < begin.size(); ++i) begin[i] += begin[i - 1];
  pass.node_holds.resize(pass.holds.size());
  std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
  for (uint32_t h = 0; h < pass.holds.size(); ++h) pass.node_holds[next[pass.holds[h].node]++] = h;
  pass.hold_brief.resize(pass.holds.size());
  for (size_t i = 0; i < pass.node_holds.size(); ++i) {
    const Hold& h = pass.holds[pass.node_holds[i]];
    pass.hold_brief[i] = {h.gang, static_cast<uint32_t>(std::popcount(h.gpus)), h.millis, h.mem,
                          pass.gangs[h.gang].age_s};
  }
}

}  // namespace

GangRefs ResolveGang(Pass& pass, const RunningGang& r,
                     const absl::flat_hash_map<std::string, uint32_t>& node_ids) {
  GangRefs f;
  f.resolved = true;
  f.cls = ClassId(pass, r.priority_class);
  f.tenant = TenantId(pass, r.tenant);
  for (const HeldNode& held : r.nodes) {
    auto it = node_ids.find(held.node);
    uint32_t node = it == node_ids.end() ? kNone : it->second;
    f.nodes.push_back(node);
    f.gpus.push_back(node == kNone ? 0 : HeldGpus(pass.hw[node], pass.view.nodes[node], held));
    if (held.gpu_share_percent > 0 && f.owner == 0) f.owner = UserId(pass, r.user);
  }
  // A gang that is not inference holds no cores of its own: its holds read the node's
  // hardware only, and are made here once.
  if (f.cls == kNone || !pass.classes[f.cls]->service) {
    f.training = true;
    for (size_t k = 0; k < r.nodes.size(); ++k) {
      if (f.nodes[k] == kNone) continue;
      f.holds.push_back(MakeHold(pass, f.nodes[k], f.gpus[k], r.nodes[k], false));
      if (f.holds.back().share) f.holds.back().owner = f.owner;
    }
  }
  return f;
}

void BuildGangs(Pass& pass) {
  absl::flat_hash_map<std::string, uint32_t> node_ids;
  for (uint32_t i = 0; i < pass.view.nodes.size(); ++i) node_ids[pass.view.nodes[i].name] = i;
  std::vector<GangRefs> refs;
  refs.reserve(pass.view.running.size());
  for (const RunningGang& r : pass.view.running) refs.push_back(ResolveGang(pass, r, node_ids));
  BuildGangs(pass, refs);
}

void BuildGangs(Pass& pass, const std::vector<GangRefs>& refs) {
  pass.gangs.clear();
  pass.holds.clear();
  pass.gangs.reserve(pass.view.running.size());
  size_t held = 0;
  for (const RunningGang& r : pass.view.running) held += r.nodes.size();
  pass.holds.reserve(held);
  for (size_t i = 0; i < pass.view.running.size(); ++i) {
    const RunningGang& r = pass.view.running[i];
    const GangRefs& f = refs[i];
    Gang g;
    g.src = &r;
    g.cls = f.cls;
    g.tenant = f.tenant;
    g.evicting = r.evicting;
    if (r.evicting && r.evicting_for != kNoJob) pass.awaited.insert(r.evicting_for);
    const PriorityClass* cls = g.cls == kNone ? nullptr : pass.classes[g.cls];
    bool service = cls && cls->service;
    g.hold_begin = static_cast<uint32_t>(pass.holds.size());
    auto add = [&](Hold h) {
      h.gang = static_cast<uint32_t>(pass.gangs.size());
      Reapply(h, pass.free[h.node]);
      uint64_t units = h.share ? h.share : std::popcount(h.gpus) * kGpuUnits;
      g.amount += Amount{units, h.millis, h.mem};
      pass.holds.push_back(h);
    };
    if (f.training) {
      for (const Hold& h : f.holds) add(h);
    } else {  // inference: its ranks take their cores on the pass's nodes
      for (size_t k = 0; k < r.nodes.size(); ++k) {
        if (f.nodes[k] == kNone) continue;
        Hold h = MakeHold(pass, f.nodes[k], f.gpus[k], r.nodes[k], service);
        if (h.share) h.owner = f.owner;
        add(h);
      }
    }
    g.hold_end = static_cast<uint32_t>(pass.holds.size());
    Time since = std::max(r.started, r.last_checkpoint);
    g.age_s = static_cast<double>(std::max<Time>(pass.now - since, 0)) / 1000.0;
    g.lost = static_cast<double>(g.amount.gpus) / kGpuUnits * g.age_s;
    g.protected_ = cls && pass.now - r.started < cls->min_runtime_s * 1000;
    pass.gangs.push_back(g);
  }
  IndexHolds(pass);
}

void Release(const Hold& h, NodeFree& f) {
  if (h.share) {  // the pool's bit stays set: its units, memory and owner go back
    ShareFree& pool = f.share[h.share_slot];
    pool.units = static_cast<uint8_t>(std::min<uint32_t>(pool.units + h.share, kShareUnits));
    pool.mem_mib += h.share_mem_mib;
    if (pool.shares > 0 && --pool.shares == 0) pool.owner = 0;
  } else {
    f.gpus |= h.gpus;
  }
  if (!h.share) (h.service ? f.service_held : f.training_held) &= ~h.gpus;
  f.millis += h.millis;
  f.mem += h.mem;
  for (uint32_t k = 0; k < h.numa_count; ++k) {
    f.numa[k].millis += h.numa_millis[k];
    f.numa[k].mem += h.numa_mem[k];
    if (!h.service) f.numa[k].training_ranks -= std::min(f.numa[k].training_ranks, h.numa_ranks[k]);
  }
}

void Reapply(const Hold& h, NodeFree& f) {
  if (h.share) {
    ShareFree& pool = f.share[h.share_slot];
    pool.units = static_cast<uint8_t>(pool.units > h.share ? pool.units - h.share : 0);
    pool.mem_mib = pool.mem_mib > h.share_mem_mib ? pool.mem_mib - h.share_mem_mib : 0;
    pool.owner = h.owner;
    ++pool.shares;
  } else {
    f.gpus &= ~h.gpus;
  }
  if (!h.share) (h.service ? f.service_held : f.training_held) |= h.gpus;
  f.millis = Sub(f.millis, h.millis);
  f.mem = Sub(f.mem, h.mem);
  for (uint32_t k = 0; k < h.numa_count; ++k) {
    f.numa[k].millis = Sub(f.numa[k].millis, h.numa_millis[k]);
    f.numa[k].mem = Sub(f.numa[k].mem, h.numa_mem[k]);
    if (!h.service) f.numa[k].training_ranks += h.numa_ranks[k];
  }
}

const std::string& NormalPool(const Pass& pass, const std::string& pool) {
  return pool.empty() ? pass.policy.default_pool : pool;
}

}  // namespace baton::sched::internal

namespace baton::sched::internal {
namespace {

uint32_t FilterId(Pass& pass, absl::flat_hash_map<std::string, uint32_t>& ids,
                  const JobRequest& r) {
  std::string key = NormalPool(pass, r.pool);
  if (!r.selector.empty() || !r.tolerations.empty()) {
    key += '\0';
    for (const auto& [k, v] : r.selector) key += k + '=' + v + '\0';
    key += '\1';
    for (const auto& t : r.tolerations) {
      key += t.key + '=' + t.value + ':' + t.effect + (t.exists ? "?" : "") + '\0';
    }
  }
  auto [it, added] = ids.try_emplace(std::move(key), pass.filters.size());
  if (added) {
    Filter f;
    f.pool = NormalPool(pass, r.pool);
    f.selector = r.selector;
    f.tolerations = r.tolerations;
    f.eligible.assign(pass.groups.size(), -1);
    pass.filters.push_back(std::move(f));
  }
  return it->second;
}

int32_t ProfileId(Pass& pass, const std::string& profile) {
  if (profile.empty()) return -1;
  auto it = std::find(pass.profiles.begin(), pass.profiles.end(), profile);
  if (it != pass.profiles.end()) return static_cast<int32_t>(it - pass.profiles.begin());
  pass.profiles.push_back(profile);  // no node has it: nothing will match
  pass.profile_nodes.emplace_back();
  return static_cast<int32_t>(pass.profiles.size() - 1);
}

// The GPU kind a request needs: its MIG profile, the MPS share kind, or "" (whole GPUs).
const std::string& KindOf(const JobRequest& r) {
  static const std::string mps = kMpsShareKind;
  return r.gpu_share_percent > 0 ? mps : r.mig_profile;
}

int32_t ModelId(Pass& pass, const std::string& model) {
  if (model.empty()) return -1;
  auto it = std::find(pass.model_filters.begin(), pass.model_filters.end(), model);
  if (it != pass.model_filters.end()) return static_cast<int32_t>(it - pass.model_filters.begin());
  pass.model_filters.push_back(model);
  std::vector<bool> row;
  for (const auto& m : pass.models) row.push_back(m.find(model) != std::string::npos);
  pass.model_match.push_back(std::move(row));
  return static_cast<int32_t>(pass.model_filters.size() - 1);
}

Shape MakeShape(Pass& pass, const JobRequest& r, uint32_t filter, bool service, uint16_t owner) {
  Shape s;
  s.id = static_cast<uint32_t>(pass.shapes.size());
  s.filter = filter;
  s.nodes = std::max<uint32_t>(r.nodes, 1);
  s.ranks = std::max<uint32_t>(r.ranks_per_node, 1);
  s.gpus = r.gpus_per_node;
  s.cpu = r.cpu_millis_per_node;
  s.mem = r.memory_bytes_per_node;
  s.profile = ProfileId(pass, KindOf(r));
  s.model = ModelId(pass, r.gpu_model);
  s.service = service;
  s.mpi = r.mpi;
  s.numa_exclusive = pass.policy.inference_numa_exclusive;
  bool even = s.gpus == 0 || s.gpus % s.ranks == 0;
  s.groups = even ? s.ranks : 1;
  s.group_gpus = s.gpus / s.groups;
  s.group_millis = CeilDiv(s.cpu, s.groups);
  s.group_mem = CeilDiv(s.mem, s.groups);
  if (r.gpu_share_percent > 0) {
    s.share = std::min(r.gpu_share_percent, kShareUnits);
    s.share_mem_mib = MiB(r.gpu_memory_bytes);
    s.owner = owner;
  }
  uint64_t units = s.share ? s.share : uint64_t{s.gpus} * kGpuUnits;
  s.ask = Amount{units * s.nodes, s.cpu * s.nodes, s.mem * s.nodes};
  if (service) {  // inference ranks get whole cores of their own
    s.group_cores = static_cast<uint32_t>(CeilDiv(s.group_millis, 1000));
    s.group_millis = uint64_t{s.group_cores} * 1000;
  }
  return s;
}

// The topology level and mode the job is placed with this pass: its own or its class's;
// required relaxes to preferred once it has been eligible for `wait` (and says so until
// then); a one-node job that is not required goes anywhere.
std::tuple<int32_t, bool, bool> TopologyOf(const Pass& pass, const Job& j, const JobRequest& r) {
  if (j.cls == kNone || pass.topo.empty()) return {-1, false, false};
  const TopologyRequest& t = EffectiveTopology(*pass.classes[j.cls], r);
  int32_t level = t.level.empty() ? -1 : TopologyLevelIndex(pass.policy, t.level);
  if (level < 0) return {-1, false, false};
  bool required = t.required;
  if (required && t.wait_ms > 0 &&
      pass.now >= std::max(j.submitted, j.cooldown_until) + t.wait_ms) {
    required = false;
  }
  if (!required && r.nodes <= 1) return {-1, false, false};
  return {level, required, required && t.wait_ms > 0};
}

}  // namespace

Job JobInterner::Intern(Pass& pass, const PendingJob& p) {
  Job j;
  j.src = &p;
  j.id = p.id;
  j.submitted = p.submitted;
  j.cooldown_until = p.cooldown_until;
  j.has_reserved_nodes = !p.reserved_nodes.empty();
  j.held = !p.held.empty() || !p.waits_for.empty();
  j.cls = ClassId(pass, p.priority_class);
  j.tenant = TenantId(pass, p.tenant);
  bool service = j.cls != kNone && pass.classes[j.cls]->service;
  const JobRequest& r = p.request;
  uint32_t filter = FilterId(pass, filter_ids_, r);
  auto [level, required, relaxes] = TopologyOf(pass, j, r);
  if (j.cls != kNone && !pass.topo.empty()) {
    const TopologyRequest& t = EffectiveTopology(*pass.classes[j.cls], r);
    j.timed = t.required && t.wait_ms > 0;
  }
  uint16_t owner = r.gpu_share_percent > 0 ? UserId(pass, p.user) : 0;
  ShapeKey key{filter,
               r.nodes,
               r.ranks_per_node,
               r.gpus_per_node,
               r.cpu_millis_per_node,
               r.memory_bytes_per_node,
               ProfileId(pass, KindOf(r)),
               ModelId(pass, r.gpu_model),
               service,
               r.mpi,
               level,
               required,
               relaxes,
               r.gpu_share_percent,
               r.gpu_share_percent > 0 ? r.gpu_memory_bytes : 0,
               owner};
  auto [it, added] = shape_ids_.try_emplace(key, pass.shapes.size());
  if (added) {
    pass.shapes.push_back(MakeShape(pass, r, filter, service, owner));
    pass.shapes.back().topo_level = level;
    pass.shapes.back().topo_required = required;
    pass.shapes.back().topo_relaxes = relaxes;
  }
  j.shape = it->second;
  return j;
}

namespace {

void BuildJobs(Pass& pass) {
  JobInterner interner;
  pass.jobs.reserve(pass.view.pending.size());
  for (const PendingJob& p : pass.view.pending) {
    Job j = interner.Intern(pass, p);
    j.awaits_victims = !pass.awaited.empty() && pass.awaited.contains(p.id);
    pass.jobs.push_back(j);
  }
}

}  // namespace

void BuildQuota(Pass& pass, const Amount& capacity) {
  std::vector<TenantQuota> quotas;
  for (const std::string& name : pass.tenant_names) {
    const TenantPolicy& t = pass.policy.Tenant(name);
    TenantQuota q;
    q.has_quota = t.nominal.has_value();
    if (q.has_quota) q.nominal = FromResources(*t.nominal);
    q.borrowing_limit = FromResources(t.borrowing_limit);
    q.lending_limit = FromResources(t.lending_limit);
    quotas.push_back(q);
    double weight = t.weight > 0 ? t.weight : 1e-9;
    auto usage = pass.view.usage.find(name);
    pass.tenant_key.push_back((usage == pass.view.usage.end() ? 0 : usage->second) / weight);
  }
  pass.quota = QuotaBook(std::move(quotas), capacity);
  pass.leaving.resize(pass.tenant_names.size());
  // What each tenant's gangs hold, added to the book once per tenant: the book's state is
  // its tenants' totals, whatever the order they came in.
  std::vector<Amount> held(pass.tenant_names.size());
  for (const Gang& g : pass.gangs) {
    held[g.tenant] += g.amount;
    if (g.evicting) pass.leaving[g.tenant] += g.amount;
  }
  for (uint32_t t = 0; t < held.size(); ++t) {
    if (!held[t].IsZero()) pass.quota.Add(t, held[t]);
  }
  for (uint32_t t = 0; t < pass.tenant_names.size(); ++t) {
    pass.start_borrowed.push_back(pass.quota.Borrowed(t));
  }
}

void IndexVictims(Pass& pass) {
  constexpr int64_t kNoVictim = std::numeric_limits<int64_t>::max();
  pass.group_min_victim.assign(pass.groups.size(), kNoVictim);
  pass.group_min_quota_victim.assign(pass.groups.size(), kNoVictim);
  for (const Gang& g : pass.gangs) {
    // Protected gangs (inside their minimum runtime) count: some classes may evict them.
    if (g.evicting || g.cls == kNone || !pass.classes[g.cls]->preemptible) continue;
    int64_t value = pass.classes[g.cls]->value;
    bool quota = pass.quota.Quota(g.tenant).has_quota;
    for (uint32_t h = g.hold_begin; h < g.hold_end; ++h) {
      uint32_t group = pass.hw[pass.holds[h].node].group;
      pass.group_min_victim[group] = std::min(pass.group_min_victim[group], value);
      if (quota) {
        pass.group_min_quota_victim[group] = std::min(pass.group_min_quota_victim[group], value);
      }
    }
  }
}

void InternPolicy(Pass& pass) {
  for (const PriorityClass& c : pass.policy.classes) {
    pass.class_ids.emplace(c.name, static_cast<uint32_t>(pass.classes.size()));
    pass.classes.push_back(&c);
  }
  for (const TenantPolicy& t : pass.policy.tenants) TenantId(pass, t.name);
}

void BuildPass(Pass& pass) {
  InternPolicy(pass);
  Amount capacity = BuildNodes(pass);
  BuildGangs(pass);
  BuildJobs(pass);
  BuildQuota(pass, capacity);
  IndexVictims(pass);
}

bool Eligible(Pass& pass, uint32_t filter, uint32_t group) {
  Filter& f = pass.filters[filter];
  int8_t& known = f.eligible[group];
  if (known >= 0) return known;
  const Group& g = pass.groups[group];
  const NodeInfo& n = pass.view.nodes[g.first_node];
  bool ok = f.pool == g.pool;
  for (auto it = f.selector.begin(); ok && it != f.selector.end(); ++it) {
    auto label = n.labels.find(it->first);
    ok = label != n.labels.end() && label->second == it->second;
  }
  for (size_t i = 0; ok && i < n.taints.size(); ++i) {
    ok = Tolerates(n.taints[i], f.tolerations);
  }
  known = ok ? 1 : 0;
  return ok;
}

}  // namespace baton::sched::internal

namespace baton::sched::internal {

const std::vector<uint32_t>& EligibleGroups(Pass& pass, uint32_t filter) {
  if (!pass.filters[filter].listed) {
    std::vector<uint32_t> groups;
    for (uint32_t g = 0; g < pass.groups.size(); ++g) {
      if (Eligible(pass, filter, g)) groups.push_back(g);
    }
    pass.filters[filter].groups = std::move(groups);
    pass.filters[filter].listed = true;
  }
  return pass.filters[filter].groups;
}

}  // namespace baton::sched::internal
