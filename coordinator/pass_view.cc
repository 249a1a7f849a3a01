#include "coordinator/pass_view.h"

#include <algorithm>
#include <set>

#include "coordinator/agent_commands.h"
#include "coordinator/dependencies.h"
#include "coordinator/events.h"
#include "coordinator/job_state.h"
#include "coordinator/sched_adapter.h"

namespace baton {
namespace {

// A gang holding the nodes of `a`'s placement; with `live`, only those where its part has
// not exited.
sched::RunningGang GangOf(const JobEntry& e, const v1::Attempt& a, const LiveAttempt* live) {
  sched::RunningGang g;
  g.id = e.job.id();
  g.tenant = e.job.spec().tenant();
  g.priority_class = e.job.spec().priority_class();
  const uint32_t share = e.job.spec().gpu_share_percent();
  if (share > 0) g.user = RunAsOf(e.job, a);  // read for MPS pools only
  for (const auto& p : a.placement()) {
    if (live != nullptr) {
      auto phase = live->nodes.find(p.node());
      if (phase == live->nodes.end() || phase->second == AttemptPhase::kExited) continue;
    }
    g.nodes.push_back(HeldOf(p));
    g.nodes.back().gpu_share_percent = share;
    g.nodes.back().gpu_memory_bytes = share > 0 ? e.job.spec().gpu_memory_bytes() : 0;
  }
  g.started = a.started_ms() ? a.started_ms() : a.scheduled_ms();
  g.last_checkpoint = a.checkpoint_time_ms();
  return g;
}

}  // namespace

std::string ServiceUserFor(const sched::Policy& policy, const v1::JobSpec& spec) {
  return spec.gpu_share_percent() > 0 ? policy.ShareUser(spec.priority_class()) : "";
}

ClusterShape ShapeOf(const NodeRegistry::Table& nodes) {
  ClusterShape shape;
  for (const auto& [name, n] : nodes) {
    const v1::Inventory& inv = n.node.inventory();
    uint32_t gpus = static_cast<uint32_t>(inv.gpus_size());
    ++shape.nodes;
    shape.max_gpus_per_node = std::max(shape.max_gpus_per_node, gpus);
    shape.max_cpu_millis_per_node =
        std::max<uint64_t>(shape.max_cpu_millis_per_node, uint64_t{inv.cpus()} * 1000);
    shape.max_memory_bytes_per_node = std::max(shape.max_memory_bytes_per_node, inv.memory_bytes());
    for (const v1::Gpu& g : inv.gpus()) {
      if (g.mig_profile().empty()) {
        shape.max_gpu_memory_bytes = std::max(shape.max_gpu_memory_bytes, g.memory_bytes());
      }
      if (g.mps_pool() && g.mig_profile().empty()) {
        uint64_t& most = shape.max_mps_memory_by_pool[n.node.pool()];
        most = std::max(most, g.memory_bytes());
      }
    }
    if (shape.nodes_with_at_least_gpus.size() <= gpus) {
      shape.nodes_with_at_least_gpus.resize(gpus + 1, 0);
    }
    for (uint32_t g = 0; g <= gpus; ++g) ++shape.nodes_with_at_least_gpus[g];
  }
  return shape;
}

bool HoldsForRestart(const JobEntry& e, const NodeRegistry::Table& nodes, absl::Time now) {
  if (e.job.spec().restart_policy() != v1::RESTART_POLICY_ALWAYS ||
      e.job.state() != v1::JOB_STATE_PENDING ||
      absl::FromUnixMillis(e.job.cooldown_until_ms()) <= now || e.job.restarts_in_a_row() == 0 ||
      e.job.attempts_size() == 0) {
    return false;
  }
  for (const auto& p : e.job.attempts().rbegin()->placement()) {  // not on a drained node
    auto n = nodes.find(p.node());
    if (n != nodes.end() && n->second.node.has_drain()) return false;
  }
  return true;
}

sched::ClusterView ViewOf(const JobTable& jobs, const NodeRegistry::Table& nodes,
                          const ReservedNodes& reserved, absl::Time now,
                          const std::function<bool(uint64_t)>& is_array,
                          const sched::Policy* policy) {
  sched::ClusterView view;
  for (const auto& [name, n] : nodes) {
    if (n.node.state() != v1::NODE_STATE_LOST) view.nodes.push_back(NodeInfoOf(n.node));
  }
  for (uint64_t id : jobs.live()) {
    const JobEntry& e = jobs.at(id);
    sched::RunningGang g = GangOf(e, *e.job.attempts().rbegin(), &*e.live);
    g.evictions = e.job.evictions();
    g.evicting = e.live->outcome == AttemptOutcome::kEvicted || e.live->kill_signal != 0;
    g.evicting_for = e.live->evicting_for;
    view.running.push_back(std::move(g));
  }
  for (const auto& key : jobs.queue()) {  // already in queue order: the scheduler's fast path
    const JobEntry& e = jobs.at(std::get<2>(key));
    // A service in its restart backoff keeps its GPUs (and cores): nobody takes them in
    // the meantime, and it is placed first when the backoff ends.
    if (HoldsForRestart(e, nodes, now)) {
      view.running.push_back(GangOf(e, *e.job.attempts().rbegin(), nullptr));
    }
    sched::PendingJob pj;
    pj.id = e.job.id();
    pj.tenant = e.job.spec().tenant();
    pj.priority_class = e.job.spec().priority_class();
    pj.request = RequestOf(e.job.spec());
    if (pj.request.gpu_share_percent > 0) {  // read for MPS pools only
      pj.user = policy != nullptr ? ServiceUserFor(*policy, e.job.spec()) : "";
      if (pj.user.empty()) pj.user = e.job.user();
    }
    pj.submitted = e.job.submitted_ms();
    pj.cooldown_until = e.job.cooldown_until_ms();
    pj.evictions = e.job.evictions();
    if (e.job.has_hold()) pj.held = HoldText(e.job.hold());
    if (e.job.after_met_size() < e.job.spec().after_size()) {
      pj.waits_for = deps::WaitText(
          e.job, deps::Unmet(e.job),
          [&jobs](uint64_t id) {
            const JobEntry* on = jobs.Find(id);
            return on == nullptr ? v1::JOB_STATE_UNSPECIFIED : on->job.state();
          },
          [&is_array](uint64_t id) { return is_array && is_array(id); });
    }
    auto r = reserved.find(pj.id);
    if (r != reserved.end()) pj.reserved_nodes = r->second;
    view.pending.push_back(std::move(pj));
  }
  return view;
}

ReservedNodes ReservationsOf(const sched::Decisions& d, const sched::ClusterView& view) {
  ReservedNodes out;
  for (const auto& r : d.reservations) {
    if (r.kind != sched::Reservation::Kind::kPreemption) continue;
    for (uint32_t i : r.nodes) out[r.job].push_back(view.nodes[i].name);
  }
  return out;
}

uint32_t MasterPortFor(const JobTable& jobs, uint64_t job_id, uint32_t attempt,
                       const std::string& first_node) {
  // Unique among the live attempts whose first node (where MASTER_ADDR points) is ours.
  std::set<uint32_t> taken;
  for (uint64_t id : jobs.live()) {
    const v1::Job& other = jobs.at(id).job;
    if (id == job_id || other.attempts_size() == 0) continue;
    const v1::Attempt& a = *other.attempts().rbegin();
    if (a.placement_size() > 0 && a.placement(0).node() == first_node) {
      taken.insert(a.master_port());
    }
  }
  return PickMasterPort(job_id, attempt, taken);
}

v1::Attempt NewAttempt(const JobTable& jobs, const NodeRegistry::Table& nodes, const v1::Job& job,
                       const sched::Placement& placement, const sched::ClusterView& view,
                       absl::Time now) {
  v1::Attempt a;
  const uint32_t number = job.attempts_size() + 1;
  a.set_number(number);
  a.set_scheduled_ms(absl::ToUnixMillis(now));
  a.set_checkpoint_step(-1);
  a.set_master_port(
      MasterPortFor(jobs, job.id(), number, view.nodes[placement.nodes.at(0).node].name));
  for (size_t i = 0; i < placement.nodes.size(); ++i) {
    const sched::NodePlacement& np = placement.nodes[i];
    const sched::NodeInfo& node = view.nodes[np.node];
    auto known = nodes.find(node.name);  // the view was built from `nodes`: always there
    *a.add_placement() =
        AssignmentOf(np, node, static_cast<uint32_t>(i), job.spec().ranks_per_node(),
                     known == nodes.end() ? std::string() : known->second.node.address());
  }
  return a;
}

std::optional<v1::Event> NoteWait(JobEntry& e, const sched::JobOutcome& o) {
  if (o.outcome == sched::Outcome::kPlaced || e.job.state() != v1::JOB_STATE_PENDING) {
    return std::nullopt;
  }
  e.job.set_message(o.reason.str());
  const int kind = static_cast<int>(o.outcome);
  if (e.said_wait == kind) return std::nullopt;
  e.said_wait = kind;
  std::string code(sched::OutcomeName(o.outcome));  // "waiting for quota" -> waiting_for_quota
  std::replace(code.begin(), code.end(), ' ', '_');
  v1::Event ev = events::Scheduling(e.job, code, o.reason.str());
  if (o.outcome == sched::Outcome::kWaitForQuota) ev.set_kind(v1::EVENT_KIND_QUOTA_REFUSAL);
  return ev;
}

std::vector<v1::Node> NodesOf(const JobTable& jobs, const NodeRegistry::Table& nodes) {
  std::vector<v1::Node> out;
  std::map<std::string, size_t> index;
  for (const auto& [name, n] : nodes) {
    index[name] = out.size();
    out.push_back(n.node);
    *out.back().mutable_gpu_utilization() = {n.gpu_usage.begin(), n.gpu_usage.end()};
    out.back().set_utilization_ms(n.gpu_usage_ms);
    for (const v1::Gpu& g : n.node.inventory().gpus()) {
      if (g.mps_pool()) out.back().add_mps_pools()->set_uuid(g.uuid());
    }
  }
  for (uint64_t id : jobs.live()) {
    const JobEntry& e = jobs.at(id);
    const v1::Attempt& a = *e.job.attempts().rbegin();
    for (const auto& p : a.placement()) {
      auto it = index.find(p.node());
      if (it == index.end() || e.live->nodes.at(p.node()) == AttemptPhase::kExited) continue;
      v1::Node& n = out[it->second];
      n.set_allocated_cpu_millis(n.allocated_cpu_millis() + p.cpu_millis());
      n.set_allocated_memory_bytes(n.allocated_memory_bytes() + p.memory_bytes());
      const uint32_t share = e.job.spec().gpu_share_percent();
      v1::MpsPoolUse* pool = nullptr;
      for (auto& u : *n.mutable_mps_pools()) {
        if (share > 0 && p.gpu_ids_size() == 1 && u.uuid() == p.gpu_ids(0)) pool = &u;
      }
      if (pool != nullptr) {
        pool->set_allocated_percent(pool->allocated_percent() + share);
        pool->set_allocated_memory_bytes(pool->allocated_memory_bytes() +
                                         e.job.spec().gpu_memory_bytes());
        pool->set_user(RunAsOf(e.job, a));
        pool->add_jobs(id);
      } else {
        n.set_allocated_gpus(n.allocated_gpus() + p.gpu_ids_size());
      }
      n.add_running_jobs(id);
      for (const auto& iso : a.isolation()) {
        if (iso.node() == p.node()) *n.add_attempts() = iso;
      }
    }
  }
  return out;
}

}  // namespace baton
