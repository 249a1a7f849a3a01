#include "tests/coordinator/scheduler_fixtures.h"

#include <algorithm>
#include <stdexcept>

namespace baton::sched::testing {

NodeInfo MakeNode(const std::string& name, const NodeSpec& spec) {
  NodeInfo n;
  n.name = name;
  n.cpu_millis = uint64_t{spec.cores} * 1000;
  n.memory_bytes = spec.memory;
  n.pool = spec.pool;
  n.taints = spec.taints;
  n.labels = spec.labels;
  n.smt = spec.smt;
  const uint32_t physical = spec.cores / spec.smt;
  for (uint32_t k = 0; k < spec.numa; ++k) {
    NumaInfo m;
    m.id = static_cast<int32_t>(k);
    for (uint32_t t = 0; t < spec.smt; ++t) {
      for (uint32_t c = k * physical / spec.numa; c < (k + 1) * physical / spec.numa; ++c) {
        m.cpus.push_back(c + t * physical);
        if (spec.smt > 1) m.core.push_back(c);
      }
    }
    m.memory_bytes = spec.memory / spec.numa;
    n.numa.push_back(m);
  }
  for (uint32_t g = 0; g < spec.gpus; ++g) {
    GpuInfo gpu;
    gpu.uuid = name + "-g" + std::to_string(g);
    gpu.model = spec.model;
    gpu.numa = static_cast<int32_t>(g * spec.numa / spec.gpus);
    n.gpus.push_back(gpu);
  }
  return n;
}

NodeInfo MakeMigNode(const std::string& name, uint32_t physical, uint32_t slices,
                     const std::string& profile) {
  NodeInfo n = MakeNode(name, NodeSpec{.gpus = 0, .numa = 1});
  for (uint32_t p = 0; p < physical; ++p) {
    for (uint32_t s = 0; s < slices; ++s) {
      GpuInfo gpu;
      gpu.uuid = name + "-p" + std::to_string(p) + "-s" + std::to_string(s);
      gpu.model = "NVIDIA H200";
      gpu.numa = 0;
      gpu.mig_profile = profile;
      gpu.parent_uuid = name + "-p" + std::to_string(p);
      n.gpus.push_back(gpu);
    }
  }
  return n;
}

JobRequest MakeRequest(const JobSpec& s) {
  JobRequest r;
  r.nodes = s.nodes;
  r.gpus_per_node = s.gpus;
  r.ranks_per_node = s.ranks ? s.ranks : std::max<uint32_t>(s.gpus, 1);
  r.cpu_millis_per_node = s.cpu ? s.cpu : (s.gpus ? s.gpus * 4000ull : 1000);
  r.memory_bytes_per_node = s.memory ? s.memory : (s.gpus ? s.gpus * 32 * kGi : 4 * kGi);
  r.mig_profile = s.mig;
  r.mpi = s.mpi;
  r.pool = s.pool;
  r.selector = s.selector;
  r.tolerations = s.tolerations;
  r.topology = s.topology;
  return r;
}

PendingJob MakeJob(JobId id, const std::string& tenant, const std::string& cls,
                   const JobSpec& spec) {
  PendingJob j;
  j.id = id;
  j.tenant = tenant;
  j.priority_class = cls;
  j.request = MakeRequest(spec);
  j.submitted = spec.submitted;
  return j;
}

RunningGang MakeGang(JobId id, const std::string& tenant, const std::string& cls,
                     const ClusterView& view, const std::vector<std::string>& nodes,
                     const std::vector<uint32_t>& gpus, Time started, Time checkpoint) {
  RunningGang g;
  g.id = id;
  g.tenant = tenant;
  g.priority_class = cls;
  g.started = started;
  g.last_checkpoint = checkpoint;
  for (const std::string& name : nodes) {
    auto it = std::find_if(view.nodes.begin(), view.nodes.end(),
                           [&](const NodeInfo& n) { return n.name == name; });
    if (it == view.nodes.end()) throw std::invalid_argument("no node " + name);
    HeldNode h;
    h.node = name;
    for (uint32_t e : gpus) h.gpu_uuids.push_back(it->gpus.at(e).uuid);
    h.cpu_millis = gpus.empty() ? 1000 : gpus.size() * 4000;
    h.memory_bytes = gpus.empty() ? 4 * kGi : gpus.size() * 32 * kGi;
    for (uint32_t e : gpus) h.ranks.push_back(HeldRank{it->gpus.at(e).numa, {}});
    g.nodes.push_back(h);
  }
  return g;
}

Policy TestPolicy() {
  Policy p;
  auto cls = [](std::string name, int32_t value, bool service) {
    PriorityClass c;
    c.name = std::move(name);
    c.value = value;
    c.preemptible = !service;
    c.service = service;
    c.cooldown_base_s = 30;
    c.cooldown_cap_s = 480;
    c.min_runtime_s = service ? 0 : 60;
    return c;
  };
  p.classes = {cls("inference-critical", 1000, true), cls("inference", 900, true),
               cls("labeling", 500, false), cls("training", 300, false),
               cls("experiment", 100, false)};
  return p;
}

TenantPolicy Tenant(const std::string& name, double weight, uint32_t nominal_gpus,
                    uint32_t lending_gpus, uint32_t borrowing_gpus) {
  TenantPolicy t;
  t.name = name;
  t.weight = weight;
  t.nominal = Resources{1'000'000'000, 1ull << 50, nominal_gpus};
  t.lending_limit = Resources{1'000'000'000, 1ull << 50, lending_gpus};
  t.borrowing_limit = Resources{1'000'000'000, 1ull << 50, borrowing_gpus};
  return t;
}

const JobOutcome& OutcomeOf(const Decisions& d, JobId job) {
  for (const auto& o : d.outcomes) {
    if (o.job == job) return o;
  }
  throw std::invalid_argument("no outcome for job " + std::to_string(job));
}

const Placement* PlacementOf(const Decisions& d, JobId job) {
  for (const auto& p : d.placements) {
    if (p.job == job) return &p;
  }
  return nullptr;
}

std::vector<JobId> Victims(const Decisions& d) {
  std::vector<JobId> out;
  for (const auto& e : d.evictions) out.push_back(e.victim);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> NodesOf(const ClusterView& view, const Placement& p) {
  std::vector<std::string> out;
  for (const auto& n : p.nodes) out.push_back(view.nodes[n.node].name);
  return out;
}

}  // namespace baton::sched::testing
