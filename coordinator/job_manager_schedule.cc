// JobManager: the scheduling pass (first-fit placement of pending gangs in priority
// order), attempt endings and their consequences (retry, requeue, terminal states), and
// the node view shared by placement, admission and `baton nodes`.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <random>

#include "common/resources.h"
#include "coordinator/events.h"
#include "coordinator/job_manager.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

sched::GangRequest ToRequest(const v1::JobSpec& spec) {
  sched::GangRequest req;
  req.nodes = spec.nodes();
  req.per_node =
      Resources{spec.cpu_millis_per_node(), spec.memory_bytes_per_node(), spec.gpus_per_node()};
  req.pool = spec.pool();
  req.selector.insert(spec.node_selector().begin(), spec.node_selector().end());
  for (const auto& t : spec.tolerations()) {
    req.tolerations.push_back({t.key(), t.value(), t.effect(), t.exists()});
  }
  return req;
}

std::string WaitReason(const v1::JobSpec& s) {
  return "waiting for room: " + std::to_string(s.nodes()) + " node(s) with " +
         std::to_string(s.gpus_per_node()) + " GPU(s), " +
         FormatCpuMillis(s.cpu_millis_per_node()) + " CPUs and " +
         FormatBytes(s.memory_bytes_per_node()) + " free" +
         (s.pool().empty() ? "" : " in pool " + s.pool());
}

// 128 random bits, hex: what `baton-agent exec` must present to run in an attempt.
std::string NewSecret() {
  std::random_device rd;
  std::string out;
  char buf[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%08x", rd());
    out += buf;
  }
  return out;
}

uint32_t MasterPort(uint64_t job_id, uint32_t attempt) {
  return 20000 + static_cast<uint32_t>((job_id * 31 + attempt) % 20000);
}

}  // namespace

ClusterShape JobManager::ShapeLocked() const {
  ClusterShape shape;
  for (const auto& [name, n] : nodes_) {
    const v1::Inventory& inv = n.node.inventory();
    uint32_t gpus = static_cast<uint32_t>(inv.gpus_size());
    ++shape.nodes;
    shape.max_gpus_per_node = std::max(shape.max_gpus_per_node, gpus);
    shape.max_cpu_millis_per_node =
        std::max<uint64_t>(shape.max_cpu_millis_per_node, uint64_t{inv.cpus()} * 1000);
    shape.max_memory_bytes_per_node = std::max(shape.max_memory_bytes_per_node, inv.memory_bytes());
    if (shape.nodes_with_at_least_gpus.size() <= gpus) {
      shape.nodes_with_at_least_gpus.resize(gpus + 1, 0);
    }
    for (uint32_t g = 0; g <= gpus; ++g) ++shape.nodes_with_at_least_gpus[g];
  }
  return shape;
}

std::vector<sched::NodeView> JobManager::NodeViewsLocked() const {
  std::vector<sched::NodeView> views;
  std::map<std::string, size_t> index;
  for (const auto& [name, n] : nodes_) {
    sched::NodeView v;
    const v1::Inventory& inv = n.node.inventory();
    v.name = name;
    v.schedulable = n.node.state() == v1::NODE_STATE_READY;
    v.free = Resources{uint64_t{inv.cpus()} * 1000, inv.memory_bytes(),
                       static_cast<uint32_t>(inv.gpus_size())};
    for (const auto& g : inv.gpus()) v.free_gpu_ids.push_back(g.uuid());
    v.pool = n.node.pool();
    v.labels.insert(n.node.labels().begin(), n.node.labels().end());
    for (const auto& t : n.node.taints()) v.taints.push_back({t.key(), t.value(), t.effect()});
    index[name] = views.size();
    views.push_back(std::move(v));
  }
  // Subtract what live attempts hold until each of their nodes confirmed the exit.
  for (uint64_t id : active_) {
    const JobEntry& e = jobs_.at(id);
    for (const auto& p : e.job.attempts().rbegin()->placement()) {
      auto phase = e.live->nodes.find(p.node());
      auto vi = index.find(p.node());
      if (vi == index.end() || phase == e.live->nodes.end() || phase->second == Phase::kExited) {
        continue;
      }
      sched::NodeView& v = views[vi->second];
      v.free -=
          Resources{p.cpu_millis(), p.memory_bytes(), static_cast<uint32_t>(p.gpu_ids_size())};
      for (const auto& gid : p.gpu_ids()) {
        v.free_gpu_ids.erase(std::remove(v.free_gpu_ids.begin(), v.free_gpu_ids.end(), gid),
                             v.free_gpu_ids.end());
      }
    }
  }
  return views;
}

void JobManager::SchedulePass() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.empty()) return;
  PassTimer timer(observer_);
  int64_t now = clock_->NowMs();
  std::vector<sched::NodeView> views = NodeViewsLocked();
  // The most any single node has free: jobs asking more per node are skipped in O(1).
  Resources most;
  for (const auto& v : views) {
    if (!v.schedulable) continue;
    most.cpu_millis = std::max(most.cpu_millis, v.free.cpu_millis);
    most.memory_bytes = std::max(most.memory_bytes, v.free.memory_bytes);
    most.gpus = std::max(most.gpus, v.free.gpus);
  }
  std::vector<JobEntry*> queue;  // pending_ is already in serving order
  for (const auto& key : pending_) {
    JobEntry& e = jobs_.at(std::get<2>(key));
    if (e.job.cooldown_until_ms() <= now) queue.push_back(&e);
  }
  Txn txn;
  for (JobEntry* e : queue) {
    const v1::JobSpec& spec = e->job.spec();
    Resources ask{spec.cpu_millis_per_node(), spec.memory_bytes_per_node(), spec.gpus_per_node()};
    auto grants = ask.Fits(most) ? sched::FirstFit(ToRequest(spec), views) : std::nullopt;
    if (grants) {
      PlaceLocked(*e, *grants, views, txn);
      continue;
    }
    // First fit lets smaller jobs behind it start (no reservation yet). Why this one
    // waits is derived state, kept in memory for queue/status only.
    if (!e->says_waiting) {
      e->job.set_message(WaitReason(spec));
      e->says_waiting = true;
      LogLocked(events::Scheduling(e->job, "waiting", e->job.message()), &e->job, txn);
    }
  }
  if (!txn.touched.empty() || !txn.batch.empty()) CommitLocked(std::move(txn));
}

void JobManager::PlaceLocked(JobEntry& e, const std::vector<sched::NodeGrant>& grants,
                             std::vector<sched::NodeView>& views, Txn& txn) {
  const v1::JobSpec& spec = e.job.spec();
  v1::Attempt* a = e.job.add_attempts();
  uint32_t number = e.job.attempts_size();
  a->set_number(number);
  a->set_scheduled_ms(clock_->NowMs());
  a->set_checkpoint_step(-1);
  a->set_master_port(MasterPort(e.job.id(), number));
  a->set_exec_secret(NewSecret());
  LiveAttempt live;
  std::string where;
  for (size_t i = 0; i < grants.size(); ++i) {
    sched::NodeView& v = views[grants[i].node_index];
    v1::NodeAssignment* p = a->add_placement();
    p->set_node(v.name);
    p->set_node_rank(i);
    for (const auto& gid : grants[i].gpu_ids) p->add_gpu_ids(gid);
    p->set_cpu_millis(spec.cpu_millis_per_node());
    p->set_memory_bytes(spec.memory_bytes_per_node());
    p->set_first_rank(i * spec.ranks_per_node());
    std::string addr = nodes_.at(v.name).node.address();
    p->set_address(addr.substr(0, addr.rfind(':')));
    v.free -=
        Resources{spec.cpu_millis_per_node(), spec.memory_bytes_per_node(), spec.gpus_per_node()};
    for (const auto& gid : grants[i].gpu_ids) {
      v.free_gpu_ids.erase(std::find(v.free_gpu_ids.begin(), v.free_gpu_ids.end(), gid));
    }
    live.nodes[v.name] = Phase::kLaunching;
    where += (where.empty() ? "" : ",") + v.name;
  }
  e.live = std::move(live);
  active_.insert(e.job.id());
  e.job.set_cooldown_until_ms(0);
  std::string placed = "attempt " + std::to_string(number) + " placed on " + where;
  LogLocked(events::Scheduling(e.job, "placed", placed), &e.job, txn);
  Transition(e, v1::JOB_STATE_SCHEDULED, placed, "scheduler", txn);
  for (const auto& p : a->placement()) {
    txn.commands.emplace_back(p.node(), LaunchCommandLocked(e, p.node_rank()));
  }
}

v1::CoordinatorCommand JobManager::LaunchCommandLocked(const JobEntry& e,
                                                       uint32_t node_rank) const {
  const v1::Attempt& a = *e.job.attempts().rbegin();
  v1::CoordinatorCommand cmd;
  v1::Launch* l = cmd.mutable_launch();
  l->set_job_id(e.job.id());
  l->set_attempt(a.number());
  *l->mutable_spec() = e.job.spec();
  *l->mutable_placement() = a.placement();
  l->set_node_rank(node_rank);
  l->set_master_port(a.master_port());
  l->set_user(e.job.user());
  l->set_exec_secret(a.exec_secret());
  l->set_kind(WorkloadKindLocked(e.job.spec()));
  for (const auto& p : a.placement()) {
    auto n = nodes_.find(p.node());
    l->add_agent_addresses(n == nodes_.end() ? "" : n->second.node.address());
  }
  return cmd;
}

void JobManager::FinishAttemptLocked(JobEntry& e, Txn& txn) {
  LiveAttempt live = std::move(*e.live);
  e.live.reset();
  active_.erase(e.job.id());
  v1::Attempt* a = e.job.mutable_attempts(e.job.attempts_size() - 1);
  a->set_ended_ms(clock_->NowMs());
  a->set_exit_code(live.exit_code);
  a->set_term_signal(live.term_signal);
  const v1::JobSpec& spec = e.job.spec();
  int32_t code = live.term_signal ? 128 + live.term_signal : live.exit_code;
  std::string actor = "coordinator";
  auto retry = [&](const std::string& why, bool counts_as_failure, const std::string& code) {
    if (counts_as_failure) e.job.set_failures(e.job.failures() + 1);
    int64_t backoff = 0;
    if (counts_as_failure) {
      int shift = std::min<int>(e.job.failures() - 1, 20);
      backoff = std::min(options_.retry_backoff_base_ms << shift, options_.retry_backoff_max_ms);
    }
    e.job.set_cooldown_until_ms(clock_->NowMs() + backoff);
    Transition(e, v1::JOB_STATE_PENDING, why, actor, txn, code);
  };
  switch (live.outcome) {
    case Outcome::kCancelled:
      a->set_end_reason("cancelled");
      Transition(e, v1::JOB_STATE_CANCELLED, e.job.cancel_reason(), e.job.cancel_requested_by(),
                 txn);
      break;
    case Outcome::kNodeLost:
      a->set_end_reason(live.outcome_reason);
      EvictedLocked(e, "node_lost", live.outcome_reason, txn);
      retry(live.outcome_reason + "; requeued from its last checkpoint", false, "");
      break;
    case Outcome::kMaxRuntime:
      a->set_end_reason(live.outcome_reason);
      e.job.set_exit_code(code ? code : 128 + SIGTERM);
      Transition(e, v1::JOB_STATE_FAILED, live.outcome_reason, actor, txn);
      break;
    case Outcome::kFailed: {
      a->set_end_reason("failed: " + live.outcome_reason);
      bool again = spec.restart_policy() == v1::RESTART_POLICY_ALWAYS ||
                   (spec.restart_policy() == v1::RESTART_POLICY_ON_FAILURE &&
                    e.job.failures() < spec.max_restarts());
      if (again) {
        retry(live.outcome_reason + "; retry " + std::to_string(e.job.failures() + 1) +
                  (spec.restart_policy() == v1::RESTART_POLICY_ALWAYS
                       ? ""
                       : " of " + std::to_string(spec.max_restarts())),
              true, "failure");
      } else {
        e.job.set_exit_code(code);
        Transition(e, v1::JOB_STATE_FAILED, live.outcome_reason, actor, txn);
      }
      break;
    }
    case Outcome::kNone:
      a->set_end_reason("succeeded");
      if (spec.restart_policy() == v1::RESTART_POLICY_ALWAYS) {
        retry("service exited 0; restarting (restart policy always)", true, "service_exit");
      } else {
        e.job.set_exit_code(0);
        Transition(e, v1::JOB_STATE_SUCCEEDED, "every rank exited 0", actor, txn);
      }
      break;
  }
  for (const auto& p : a->placement()) {
    v1::CoordinatorCommand cmd;
    cmd.mutable_ack()->set_job_id(e.job.id());
    cmd.mutable_ack()->set_attempt(a->number());
    txn.commands.emplace_back(p.node(), std::move(cmd));
  }
}

std::vector<v1::Node> JobManager::ListNodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Node> out;
  std::map<std::string, size_t> index;
  for (const auto& [name, n] : nodes_) {
    index[name] = out.size();
    out.push_back(n.node);
  }
  for (uint64_t id : active_) {
    const JobEntry& e = jobs_.at(id);
    for (const auto& p : e.job.attempts().rbegin()->placement()) {
      auto it = index.find(p.node());
      if (it == index.end() || e.live->nodes.at(p.node()) == Phase::kExited) continue;
      v1::Node& n = out[it->second];
      n.set_allocated_cpu_millis(n.allocated_cpu_millis() + p.cpu_millis());
      n.set_allocated_memory_bytes(n.allocated_memory_bytes() + p.memory_bytes());
      n.set_allocated_gpus(n.allocated_gpus() + p.gpu_ids_size());
      n.add_running_jobs(id);
      for (const auto& iso : e.job.attempts().rbegin()->isolation()) {
        if (iso.node() == p.node()) *n.add_attempts() = iso;
      }
    }
  }
  return out;
}

}  // namespace baton
