#include "coordinator/sched_adapter.h"

#include <algorithm>
#include <cstdint>

namespace baton {

sched::JobRequest RequestOf(const v1::JobSpec& spec) {
  sched::JobRequest r;
  r.nodes = spec.nodes();
  r.ranks_per_node = spec.ranks_per_node();
  r.gpus_per_node = spec.gpus_per_node();
  r.cpu_millis_per_node = spec.cpu_millis_per_node();
  r.memory_bytes_per_node = spec.memory_bytes_per_node();
  r.mig_profile = spec.mig_profile();
  r.gpu_model = spec.gpu_model();
  r.mpi = spec.launch_mode() == v1::LAUNCH_MODE_MPI;
  r.gpu_share_percent = spec.gpu_share_percent();
  r.gpu_memory_bytes = spec.gpu_memory_bytes();
  r.pool = spec.pool();
  r.selector.insert(spec.node_selector().begin(), spec.node_selector().end());
  for (const auto& t : spec.tolerations()) {
    r.tolerations.push_back({t.key(), t.value(), t.effect(), t.exists()});
  }
  if (spec.has_topology()) {
    r.topology = {spec.topology().level(), spec.topology().required(),
                  int64_t{spec.topology().wait_seconds()} * 1000};
  }
  return r;
}

sched::NodeInfo NodeInfoOf(const v1::Node& node) {
  const v1::Inventory& inv = node.inventory();
  sched::NodeInfo n;
  n.name = node.name();
  // A drained node counts for feasibility (its jobs wait, as for a lost one) but takes no work.
  n.schedulable = node.state() == v1::NODE_STATE_READY && !node.has_drain();
  n.cpu_millis = uint64_t{inv.cpus()} * 1000;
  n.memory_bytes = inv.memory_bytes();
  // By CPU: the agent's topology (SMT siblings share a core); kNoCore where it names none.
  constexpr uint32_t kNoCore = UINT32_MAX;
  std::vector<uint32_t> core_of;
  for (const auto& c : inv.cores()) {
    for (uint32_t cpu : c.cpus()) {
      if (cpu >= kMaxCpuId) continue;  // refused at registration
      if (cpu >= core_of.size()) core_of.resize(cpu + 1, kNoCore);
      core_of[cpu] = c.id();
    }
    n.smt = std::max(n.smt, static_cast<uint32_t>(c.cpus_size()));
  }
  for (const auto& numa : inv.numa_nodes()) {
    sched::NumaInfo m{numa.id(), {numa.cpus().begin(), numa.cpus().end()}, numa.memory_bytes(), {}};
    // Every CPU's core, or none (an older agent): a CPU the cores leave out is its own.
    for (uint32_t cpu : m.cpus) {
      if (core_of.empty()) break;
      bool known = cpu < core_of.size() && core_of[cpu] != kNoCore;
      m.core.push_back(known ? core_of[cpu] : sched::OwnCore(cpu));
    }
    n.numa.push_back(std::move(m));
  }
  for (const auto& g : inv.gpus()) {
    n.gpus.push_back({g.uuid(), g.model(), g.numa_node(), g.mig_profile(), g.parent_uuid(),
                      g.mps_pool() && g.mig_profile().empty(), g.memory_bytes()});
  }
  n.pool = node.pool();
  n.labels.insert(node.labels().begin(), node.labels().end());
  for (const auto& t : node.taints()) n.taints.push_back({t.key(), t.value(), t.effect()});
  return n;
}

sched::HeldNode HeldOf(const v1::NodeAssignment& p) {
  sched::HeldNode h;
  h.node = p.node();
  h.gpu_uuids.assign(p.gpu_ids().begin(), p.gpu_ids().end());
  h.cpu_millis = p.cpu_millis();
  h.memory_bytes = p.memory_bytes();
  for (const auto& r : p.ranks()) h.ranks.push_back({r.numa(), {r.cpus().begin(), r.cpus().end()}});
  return h;
}

v1::NodeAssignment AssignmentOf(const sched::NodePlacement& np, const sched::NodeInfo& node,
                                uint32_t node_rank, uint32_t ranks_per_node,
                                const std::string& agent_address) {
  v1::NodeAssignment p;
  p.set_node(node.name);
  p.set_node_rank(node_rank);
  for (uint32_t g : np.gpus) p.add_gpu_ids(node.gpus[g].uuid);
  p.set_cpu_millis(np.cpu_millis);
  p.set_memory_bytes(np.memory_bytes);
  p.set_first_rank(node_rank * ranks_per_node);
  p.set_address(agent_address.substr(0, agent_address.rfind(':')));
  for (const auto& r : np.ranks) {
    v1::RankBinding* b = p.add_ranks();
    b->set_numa(r.numa);
    for (uint32_t c : r.cpus) b->add_cpus(c);
  }
  return p;
}

}  // namespace baton
