// JobManager: agent registration and reconciliation, attempt reports, stops, node loss,
// admins' drains, and the periodic tick (leases, max runtimes).
#include <csignal>

#include "common/ids.h"
#include "common/status.h"
#include "coordinator/agent_commands.h"
#include "coordinator/events.h"
#include "coordinator/job_manager.h"
#include "coordinator/sched_adapter.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// The attempt keeps each node's latest limits and stats (shown by `baton status`).
void MergeIsolation(const std::string& node, const v1::AttemptIsolation& iso, v1::Attempt* a) {
  for (auto& existing : *a->mutable_isolation()) {
    if (existing.node() == node) {
      existing = iso;
      existing.set_node(node);
      return;
    }
  }
  v1::AttemptIsolation* added = a->add_isolation();
  *added = iso;
  added->set_node(node);
}

absl::Status CheckRegister(const v1::Register& reg) {
  if (!IsValidName(reg.node())) {
    return absl::InvalidArgumentError("register.node: '" + reg.node() + "' is not a valid name");
  }
  if (reg.address().empty() || reg.address().find(':') == std::string::npos) {
    return absl::InvalidArgumentError("register.address: '" + reg.address() +
                                      "' must be host:port");
  }
  if (reg.inventory().cpus() == 0 || reg.inventory().memory_bytes() == 0) {
    return absl::InvalidArgumentError("register.inventory: no CPUs or no memory reported");
  }
  // CPU ids index the scheduler's per-node tables (kMaxCpuId, sched_adapter.h).
  auto check_cpus = [](const auto& cpus, const std::string& where) -> absl::Status {
    for (uint32_t cpu : cpus) {
      if (cpu >= kMaxCpuId) {
        return absl::InvalidArgumentError("register.inventory." + where + ": CPU id " +
                                          std::to_string(cpu) + " is out of range (below " +
                                          std::to_string(kMaxCpuId) + ")");
      }
    }
    return absl::OkStatus();
  };
  for (const auto& numa : reg.inventory().numa_nodes()) {
    BATON_RETURN_IF_ERROR(check_cpus(numa.cpus(), "numa_nodes"));
  }
  for (const auto& core : reg.inventory().cores()) {
    BATON_RETURN_IF_ERROR(check_cpus(core.cpus(), "cores"));
  }
  return absl::OkStatus();
}

absl::Status NeverRegistered(const std::string& node) {
  return absl::NotFoundError("node '" + node.substr(0, 64) +
                             "' has never registered (`baton nodes` lists them)");
}

}  // namespace

absl::Status JobManager::AgentRegister(const v1::Register& reg, std::shared_ptr<AgentLink> link) {
  if (absl::Status s = CheckRegister(reg); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  NodeRegistry::Entry& n = nodes_.Connect(reg.node(), link, clock_->Monotonic());
  v1::NodeState before = n.node.state();
  n.node.set_name(reg.node());
  n.node.set_address(reg.address());
  *n.node.mutable_inventory() = reg.inventory();
  n.node.set_state(v1::NODE_STATE_READY);
  n.node.set_last_seen_ms(clock_->NowMs());
  n.node.set_pool(reg.pool());
  shape_.reset();  // its inventory or pool may be new
  *n.node.mutable_labels() = reg.labels();
  *n.node.mutable_taints() = reg.taints();
  *n.node.mutable_isolation() = reg.isolation();
  v1::CoordinatorCommand hello;
  hello.mutable_registered()->set_heartbeat_interval_ms(
      absl::ToInt64Milliseconds(options_.heartbeat_interval));
  hello.mutable_registered()->set_lease_ms(absl::ToInt64Milliseconds(options_.lease));
  link->Send(hello);  // before any reconciliation command
  spdlog::info("node {} registered from {} ({} CPUs, {} GPUs, {} attempts reported; was {})",
               reg.node(), reg.address(), reg.inventory().cpus(), reg.inventory().gpus_size(),
               reg.attempts_size(), NodeStateName(before));
  Txn txn;
  txn.batch.nodes.push_back(n.node);
  LogLocked(events::NodeChange(
                n.node, before == v1::NODE_STATE_UNSPECIFIED ? "registered" : "reconnected",
                "registered from " + reg.address() + " (was " + NodeStateName(before) + ")"),
            nullptr, txn);
  ReconcileNodeLocked(reg.node(), reg, txn);
  CommitLocked(std::move(txn));
  Kick();
  return absl::OkStatus();
}

void JobManager::DrainNode(const Caller& caller, const v1::DrainNodeRequest& req,
                           std::function<void(absl::StatusOr<v1::Node>)> done) {
  constexpr size_t kMaxReasonBytes = 512;
  if (req.reason().size() > kMaxReasonBytes) {
    return done(absl::InvalidArgumentError("reason: at most 512 bytes"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  NodeRegistry::Entry* entry = nodes_.Find(req.node());
  if (entry == nullptr) return done(NeverRegistered(req.node()));
  v1::Node& node = entry->node;
  const int64_t now = clock_->NowMs();
  v1::NodeDrain* d = node.mutable_drain();
  if (d->since_ms() == 0) d->set_since_ms(now);
  d->set_by(caller.user);
  d->set_reason(req.reason());
  d->set_evict(d->evict() || req.evict());
  const std::string why = "node " + node.name() + " drained by " + caller.user +
                          (req.reason().empty() ? "" : " (" + req.reason() + ")");
  Txn txn;
  txn.batch.nodes.push_back(node);
  LogLocked(events::NodeChange(
                node, "drained",
                why + (req.evict() ? "; its jobs checkpoint and move" : "; what runs there stays"),
                caller.user),
            nullptr, txn);
  if (req.evict()) {
    for (uint64_t id : jobs_.LiveOn(node.name())) {
      JobEntry& e = jobs_.at(id);
      if (e.live->outcome != Outcome::kNone) continue;  // already leaving
      StopAsAskedLocked(e, why, caller.user, txn);
      e.job.mutable_attempts(e.job.attempts_size() - 1)->set_drained_node(node.name());
    }
  }
  spdlog::info("{}{}", why, req.evict() ? ", its jobs evicted" : "");
  txn.reply = [done = std::move(done), out = node] { done(out); };
  CommitLocked(std::move(txn));
  Kick();
}

void JobManager::UndrainNode(const Caller& caller, const std::string& name,
                             std::function<void(absl::StatusOr<v1::Node>)> done) {
  std::lock_guard<std::mutex> lock(mu_);
  NodeRegistry::Entry* entry = nodes_.Find(name);
  if (entry == nullptr) return done(NeverRegistered(name));
  v1::Node& node = entry->node;
  if (!node.has_drain()) return done(node);  // nothing to do: idempotent, as kubectl uncordon
  node.clear_drain();
  Txn txn;
  txn.batch.nodes.push_back(node);
  LogLocked(
      events::NodeChange(node, "undrained",
                         "node " + name + " undrained by " + caller.user + ": takes work again",
                         caller.user),
      nullptr, txn);
  spdlog::info("node {} undrained by {}", name, caller.user);
  txn.reply = [done = std::move(done), out = node] { done(out); };
  CommitLocked(std::move(txn));
  Kick();
}

void JobManager::ReconcileNodeLocked(const std::string& node, const v1::Register& reg, Txn& txn) {
  std::set<std::pair<uint64_t, uint32_t>> reported;
  for (const auto& r : reg.attempts()) {
    reported.emplace(r.job_id(), r.attempt());
    ApplyReportLocked(node, r, /*registering=*/true, txn);
  }
  // Attempts we expect on this node that the agent did not mention.
  for (uint64_t id : std::set<uint64_t>(jobs_.live())) {
    JobEntry& e = jobs_.at(id);
    if (!e.live) continue;
    const uint32_t attempt = e.job.attempts_size();
    if (!e.live->nodes.count(node) || reported.count({id, attempt})) continue;
    const ReportEffects fx =
        PartUnmentioned(*e.live, node, attempt, options_.failure_kill_grace_seconds);
    if (fx.resend_launch) {
      for (const auto& p : e.job.attempts(attempt - 1).placement()) {
        if (p.node() == node)
          txn.commands.emplace_back(node, LaunchCommandLocked(e, p.node_rank()));
      }
    }
    ApplyEffectsLocked(e, fx, txn);
  }
}

void JobManager::AgentHeartbeat(const std::string& node, const v1::Heartbeat& heartbeat) {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.Seen(node, clock_->Monotonic());
  NodeRegistry::Entry* e = nodes_.Find(node);
  if (e == nullptr || heartbeat.gpus_sampled_ms() == 0) return;
  // Only the node's own GPUs, at most one reading each: an agent says nothing of others.
  e->gpu_usage.clear();
  for (const v1::Gpu& g : e->node.inventory().gpus()) {
    for (const v1::GpuUtilization& u : heartbeat.gpus()) {
      if (u.uuid() != g.uuid()) continue;
      v1::GpuUtilization& kept = e->gpu_usage.emplace_back(u);
      if (kept.has_percent() && kept.percent() > 100) kept.clear_percent();
      break;
    }
  }
  e->gpu_usage_ms = heartbeat.gpus_sampled_ms();
}

void JobManager::AgentReport(const std::string& node, const v1::AttemptReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.Seen(node, clock_->Monotonic());
  Txn txn;
  ApplyReportLocked(node, report, /*registering=*/false, txn);
  CommitLocked(std::move(txn));
}

void JobManager::ApplyReportLocked(const std::string& node, const v1::AttemptReport& r,
                                   bool registering, Txn& txn) {
  JobEntry* e = jobs_.Find(r.job_id());
  bool current = e && e->live && r.attempt() == static_cast<uint32_t>(e->job.attempts_size()) &&
                 e->live->nodes.count(node);
  bool running = r.phase() == v1::AttemptReport::PHASE_RUNNING;
  if (!current) {
    // Stale: an attempt that is over, or a job we never heard of. Stop it; forget it.
    if (running) {
      txn.commands.emplace_back(node,
                                KillCommand(r.job_id(), r.attempt(), SIGKILL, 0, "stale attempt"));
    } else {
      txn.commands.emplace_back(node, AckCommand(r.job_id(), r.attempt()));
    }
    return;
  }
  LiveAttempt& live = *e->live;
  v1::Attempt* a = e->job.mutable_attempts(e->job.attempts_size() - 1);
  if (RecordProgress(*a, r, clock_->NowMs())) txn.touched.insert(e->job.id());
  if (r.has_isolation()) MergeIsolation(node, r.isolation(), a);
  const ReportEffects fx =
      ApplyReport(live, node, r, registering, options_.failure_kill_grace_seconds);
  if (fx.resend_preempt) txn.commands.emplace_back(node, PreemptCommandLocked(*e));
  if (fx.extend_grace) ExtendGraceLocked(*e, txn);
  if (fx.resend_stop) {
    txn.commands.emplace_back(node, KillCommand(r.job_id(), r.attempt(), live.kill_signal,
                                                live.kill_grace, live.outcome_reason));
  }
  if (fx.all_running && e->job.state() == v1::JOB_STATE_SCHEDULED) {
    a->set_started_ms(clock_->NowMs());
    Transition(*e, v1::JOB_STATE_RUNNING,
               "running on " + std::to_string(live.nodes.size()) + " node(s)", "agent:" + node,
               txn);
  }
  ApplyEffectsLocked(*e, fx, txn);
}

void JobManager::ApplyEffectsLocked(JobEntry& e, const ReportEffects& fx, Txn& txn) {
  if (fx.stop) SendStopLocked(e, *fx.stop, txn);
  if (fx.ended) FinishAttemptLocked(e, txn);
}

void JobManager::SendStopLocked(const JobEntry& e, const StopOrder& order, Txn& txn) {
  for (const std::string& node : order.nodes) {
    txn.commands.emplace_back(node, KillCommand(e.job.id(), e.job.attempts_size(), order.signal,
                                                order.grace, order.reason));
  }
}

void JobManager::OrderStopLocked(JobEntry& e, int signal, uint32_t grace, const std::string& reason,
                                 Txn& txn) {
  SendStopLocked(e, OrderStop(*e.live, signal, grace, reason), txn);
}

void JobManager::AgentDisconnected(const std::string& node, const AgentLink* link) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!nodes_.Disconnect(node, link)) return;
  v1::Node& n = nodes_.Find(node)->node;
  if (n.state() == v1::NODE_STATE_READY) {
    n.set_state(v1::NODE_STATE_DISCONNECTED);
    Txn txn;
    LogLocked(events::NodeChange(n, "disconnected", "agent stream closed"), nullptr, txn);
    CommitLocked(std::move(txn));
  }
  spdlog::warn("node {} disconnected; declared lost in {} unless it returns", node,
               absl::FormatDuration(options_.lost_after()));
}

void JobManager::NodeLostLocked(NodeRegistry::Entry& n, Txn& txn) {
  const std::string& node = n.node.name();
  spdlog::warn(
      "node {} lost: no contact for {}; its attempts are replaced once their "
      "agent has stopped them (stop_after_disconnect + grace + margin)",
      node, absl::FormatDuration(options_.lost_after()));
  n.node.set_state(v1::NODE_STATE_LOST);
  LogLocked(events::NodeChange(
                n.node, "lost",
                "no contact for " +
                    std::to_string(absl::ToInt64Milliseconds(options_.lost_after())) + " ms"),
            nullptr, txn);
  nodes_.Cut(n);
  txn.batch.nodes.push_back(n.node);
}

absl::Duration JobManager::ReplaceAfterLocked(const JobEntry& e) const {
  const int64_t stop_s = policy_.policy.StopAfterDisconnectS(e.job.spec().priority_class());
  return ReplaceAfter(
      stop_s == Policy::kNever ? std::nullopt : std::optional(absl::Seconds(stop_s)),
      absl::Seconds(e.job.spec().grace_seconds()), options_.lost_margin, options_.lost_after());
}

void JobManager::ReplaceLostAttemptsLocked(const std::string& node, absl::Duration silent,
                                           Txn& txn) {
  for (uint64_t id : jobs_.LiveOn(node)) {
    JobEntry& e = jobs_.at(id);
    if (silent <= ReplaceAfterLocked(e)) continue;
    ApplyEffectsLocked(
        e, PartLost(*e.live, node, "node " + node + " lost", options_.failure_kill_grace_seconds),
        txn);
  }
}

void JobManager::Tick() {
  const std::vector<uint64_t> expired = ExpiredJobs();
  std::lock_guard<std::mutex> lock(mu_);
  Txn txn;
  const absl::Time mono = clock_->Monotonic();
  for (auto& [name, n] : nodes_.all()) {
    absl::Duration silent = mono - n.last_seen;
    if (silent > options_.lost_after() && n.node.state() != v1::NODE_STATE_LOST)
      NodeLostLocked(n, txn);
    if (n.node.state() == v1::NODE_STATE_LOST) ReplaceLostAttemptsLocked(name, silent, txn);
  }
  const absl::Time now = clock_->Now();
  submit_keys_.Expire(now, [&](uint64_t id) { return jobs_.Find(id) != nullptr; });
  for (uint64_t id : jobs_.live()) {
    JobEntry& e = jobs_.at(id);
    if (e.live && e.live->outcome == Outcome::kEvicted && e.live->saving_step) {
      ExtendGraceLocked(e, txn);
    }
    if (!e.live) continue;
    const v1::Attempt& a = *e.job.attempts().rbegin();
    const std::optional<StopOrder> stop = StopForMaxRuntime(
        *e.live,
        a.started_ms() ? std::optional(absl::FromUnixMillis(a.started_ms())) : std::nullopt,
        absl::Seconds(e.job.spec().max_runtime_seconds()), e.job.spec().grace_seconds(), now);
    if (stop) SendStopLocked(e, *stop, txn);
  }
  for (uint64_t id : jobs_.CooledDown(now)) {
    Transition(jobs_.at(id), v1::JOB_STATE_PENDING, "cooldown over; back in the queue",
               "coordinator", txn);
  }
  if (clock_->Now() - usage_saved_ >= options_.usage_save_interval) {
    // Charge what runs now and keep the ledger, so that a restart forgives nothing.
    ledger_.Advance(absl::ToUnixMillis(now),
                    sched::RunningGpusByTenant(ViewOf(jobs_, nodes_.all(), reserved_nodes_, now)));
    v1::FairShareUsage usage;
    usage.set_as_of_ms(ledger_.as_of());
    for (const auto& [tenant, gpu_seconds] : ledger_.Snapshot()) {
      (*usage.mutable_gpu_seconds())[tenant] = gpu_seconds;
    }
    txn.batch.usage = std::move(usage);
    usage_saved_ = clock_->Now();
  }
  if (!expired.empty()) DeleteExpiredLocked(expired, txn);
  if (!arrays_.empty()) ExpireArraysLocked(now, txn);
  ExpireUsageLocked(now, txn);
  finished_.Trim(durable_txns_.load());
  if (!txn.batch.empty() || !txn.commands.empty() || !txn.touched.empty()) {
    CommitLocked(std::move(txn));
  }
}

std::vector<uint64_t> JobManager::ExpiredJobs() {
  if (options_.retention <= absl::ZeroDuration()) return {};
  const absl::Time now = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now - retention_checked_ < absl::Minutes(1)) return {};
    retention_checked_ = now;
  }
  // From the store's index of finished jobs by end time, outside the lock: only durable
  // final records are in it. A big backlog goes a batch per tick.
  constexpr size_t kBatch = 20'000;
  auto ids = store_->EndedBefore(absl::ToUnixMillis(now - options_.retention), kBatch);
  if (!ids.ok()) {
    spdlog::warn("retention: cannot read the finished jobs: {}", ids.status().ToString());
    return {};
  }
  if (ids->size() == kBatch) {
    std::lock_guard<std::mutex> lock(mu_);
    retention_checked_ = absl::InfinitePast();  // more at the next tick
  }
  return *ids;
}

void JobManager::DeleteExpiredLocked(const std::vector<uint64_t>& expired, Txn& txn) {
  // Finished jobs whose end is older than the retention go, with their events; what
  // the scheduler needs (fair-share usage) is kept apart and stays.
  for (uint64_t id : expired) {
    if (jobs_.Find(id) != nullptr)
      continue;  // still live (a final state whose attempt has not ended)
    finished_.Erase(id);
    txn.batch.deleted_jobs.push_back(id);
  }
  if (!txn.batch.deleted_jobs.empty()) {
    spdlog::info("retention: deleted {} job(s) finished more than {} ago",
                 txn.batch.deleted_jobs.size(), absl::FormatDuration(options_.retention));
    observer_->OnJobsDeleted(txn.batch.deleted_jobs.size());
  }
}

}  // namespace baton
