// JobManager: the scheduling pass — the cluster view handed to the pure scheduler
// (coordinator/scheduler), and its decisions carried out: placements become attempts and
// launches, evictions become PREEMPTING and Preempt commands — plus explain, and the node
// view shared by admission and `baton nodes`.

#include <cmath>
#include <csignal>

#include "absl/strings/str_join.h"
#include "common/ids.h"
#include "common/resources.h"
#include "common/status.h"
#include "coordinator/agent_commands.h"
#include "coordinator/events.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_state.h"
#include "coordinator/pass_view.h"
#include "coordinator/sched_adapter.h"
#include "coordinator/scheduler/explain.h"
#include "coordinator/scheduler/plan.h"
#include "spdlog/spdlog.h"

namespace baton {

sched::ClusterView JobManager::ViewWithUsageLocked(absl::Time now,
                                                   sched::UsageLedger& ledger) const {
  sched::ClusterView view = ViewOf(
      jobs_, nodes_.all(), reserved_nodes_, now,
      [this](uint64_t id) { return arrays_.contains(id); }, &policy_.policy);
  ledger.Advance(absl::ToUnixMillis(now), sched::RunningGpusByTenant(view));
  view.usage = ledger.Snapshot();
  return view;
}

void JobManager::SchedulePass() {
  std::lock_guard<std::mutex> lock(mu_);
  Txn txn;
  if (!making_.empty()) MakeTasksLocked(txn);  // arrays' next tasks join the queue
  bool any_ready = false;
  for (const auto& [name, n] : nodes_.all()) any_ready |= n.node.state() == v1::NODE_STATE_READY;
  if (jobs_.queue().empty() || !any_ready) {  // nothing can be placed or evicted
    if (!txn.touched.empty()) CommitLocked(std::move(txn));
    return;
  }
  PassTimer timer(observer_);
  absl::Time now = clock_->Now();
  sched::ClusterView view = ViewWithUsageLocked(now, ledger_);
  sched::Decisions d = sched::Plan(view, policy_.policy, absl::ToUnixMillis(now));
  for (const auto& p : d.placements) PlaceLocked(jobs_.at(p.job), p, view, txn);
  for (const auto& ev : d.evictions) EvictLocked(jobs_.at(ev.victim), ev, txn);
  reserved_nodes_ = ReservationsOf(d, view);
  for (const auto& o : d.outcomes) {
    // Why a job waits is derived state: kept in memory for queue/status, not stored.
    JobEntry& e = jobs_.at(o.job);
    if (std::optional<v1::Event> ev = NoteWait(e, o)) LogLocked(std::move(*ev), &e.job, txn);
  }
  if (!txn.touched.empty() || !txn.commands.empty() || !txn.batch.empty()) {
    CommitLocked(std::move(txn));
  }
}

void JobManager::PlaceLocked(JobEntry& e, const sched::Placement& placement,
                             const sched::ClusterView& view, Txn& txn) {
  v1::Attempt record = NewAttempt(jobs_, nodes_.all(), e.job, placement, view, clock_->Now());
  record.set_run_as(ServiceUserFor(policy_.policy, e.job.spec()));  // "": its owner
  for (const std::string& d : placement.topology_domains) record.add_topology_domains(d);
  record.set_topology_min_domains(placement.topology_min_domains);
  LiveAttempt live;
  live.exec_secret = RandomHex128();  // what `baton-agent exec` must present
  v1::StoredExecSecret secret;
  secret.set_job_id(e.job.id());
  secret.set_attempt(record.number());
  secret.set_secret(live.exec_secret);
  txn.batch.secrets.push_back(std::move(secret));
  std::string where;
  for (const auto& p : record.placement()) {
    live.nodes[p.node()] = Phase::kLaunching;
    where += (where.empty() ? "" : ",") + p.node();
  }
  const uint32_t number = record.number();
  v1::Attempt* a = e.job.add_attempts();
  *a = std::move(record);
  jobs_.StartAttempt(e, std::move(live));
  reserved_nodes_.erase(e.job.id());
  e.job.set_cooldown_until_ms(0);
  std::string placed = "attempt " + std::to_string(number) + " placed on " + where;
  if (!placement.topology_domains.empty()) {
    placed += " (" + std::to_string(placement.topology_domains.size()) +
              " topology domain(s): " + absl::StrJoin(placement.topology_domains, ",") + ")";
  }
  LogLocked(events::Scheduling(e.job, "placed", placed), &e.job, txn);
  Transition(e, v1::JOB_STATE_SCHEDULED, placed, "scheduler", txn);
  for (const auto& p : a->placement()) {
    txn.commands.emplace_back(p.node(), LaunchCommandLocked(e, p.node_rank()));
  }
}

void JobManager::EvictLocked(JobEntry& e, const sched::Eviction& ev, Txn& txn,
                             const std::string& actor) {
  if (!e.live) return;
  const uint32_t grace_s = e.job.spec().grace_seconds();
  const std::optional<std::vector<std::string>> to =
      BeginEviction(*e.live, ev.message, ev.preemptor, absl::Seconds(grace_s), clock_->Now());
  if (!to) return;  // already leaving
  v1::Attempt* a = e.job.mutable_attempts(e.job.attempts_size() - 1);
  a->set_evicted_for(ev.preemptor);
  a->set_lost_gpu_seconds(ev.lost_gpu_seconds);
  a->set_preempted_ms(absl::ToUnixMillis(e.live->preempted));
  a->set_preempt_deadline_ms(absl::ToUnixMillis(e.live->preempt_deadline));
  Transition(e, v1::JOB_STATE_PREEMPTING,
             ev.message + "; checkpoint and exit within " + std::to_string(grace_s) + " s", actor,
             txn);
  for (const std::string& node : *to) txn.commands.emplace_back(node, PreemptCommandLocked(e));
}

void JobManager::StopAsAskedLocked(JobEntry& e, const std::string& why, const std::string& actor,
                                   Txn& txn) {
  sched::Eviction ev;
  ev.victim = e.job.id();
  ev.lost_gpu_seconds = events::LostGpuSeconds(e.job, clock_->NowMs());
  ev.message = why;
  EvictLocked(e, ev, txn, actor);
  txn.touched.insert(e.job.id());
}

v1::CoordinatorCommand JobManager::PreemptCommandLocked(const JobEntry& e) const {
  return PreemptCommand(e.job.id(), e.job.attempts_size(), e.live->preempt_deadline,
                        e.live->outcome_reason);
}

void JobManager::ExtendGraceLocked(JobEntry& e, Txn& txn) {
  LiveAttempt& live = *e.live;
  const absl::Duration grace = absl::Seconds(e.job.spec().grace_seconds());
  const std::optional<absl::Time> wanted =
      ExtendedDeadline(live, grace, options_.grace_cap_factor, clock_->Now());
  if (!wanted) return;
  v1::Attempt* a = e.job.mutable_attempts(e.job.attempts_size() - 1);
  if (a->preempt_deadline_ms() ==
      a->preempted_ms() + int64_t{e.job.spec().grace_seconds()} * 1000) {  // the first move
    NoteEvent(e, e.job.state(),
              "checkpoint of step " + std::to_string(*live.saving_step) +
                  " in progress: grace extended (at most to " +
                  std::to_string(absl::ToInt64Seconds(GraceCap(grace, options_.grace_cap_factor))) +
                  " s)",
              "coordinator", txn);
  }
  live.preempt_deadline = *wanted;
  a->set_preempt_deadline_ms(absl::ToUnixMillis(*wanted));
  txn.touched.insert(e.job.id());
  for (const std::string& node : UnendedParts(live)) {
    txn.commands.emplace_back(node, PreemptCommandLocked(e));
  }
}

v1::SharesResponse JobManager::Shares() const {
  std::lock_guard<std::mutex> lock(mu_);
  sched::UsageLedger ledger = ledger_;  // a look: only passes and Tick charge ledger_
  sched::ClusterView view = ViewWithUsageLocked(clock_->Now(), ledger);
  v1::SharesResponse out;
  for (const auto& s : sched::Shares(view, policy_.policy)) {
    v1::TenantShare* t = out.add_tenants();
    t->set_tenant(s.tenant);
    t->set_weight(s.weight);
    t->set_usage_gpu_seconds(s.usage_gpu_seconds);
    t->set_usage_share(s.usage_share);
    t->set_weight_share(s.weight_share);
    // Whole GPUs in the reply: MPS shares round up (a tenant with a share shows 1).
    t->set_running_gpus(static_cast<uint32_t>(std::ceil(s.running_gpus - 1e-9)));
    t->set_pending_gpus(static_cast<uint32_t>(std::ceil(s.pending_gpus - 1e-9)));
    t->set_has_quota(s.nominal.has_value());
    if (s.nominal) t->set_quota_gpus(s.nominal->gpus);
    t->set_half_life_seconds(static_cast<double>(policy_.policy.fair_share_half_life_s));
  }
  return out;
}

absl::StatusOr<v1::ExplainResponse> JobManager::Explain(uint64_t job_id) const {
  auto not_waiting = [job_id](const v1::Job& job) {
    v1::ExplainResponse out;
    out.set_outcome(IsTerminal(job.state()) ? "finished" : StateName(job.state()));
    out.set_reason(job.message());
    out.set_text("job " + std::to_string(job_id) + " is " + StateName(job.state()) +
                 (job.message().empty() ? "" : ": " + job.message()) + "\n");
    return out;
  };
  std::unique_lock<std::mutex> lock(mu_);
  const JobEntry* found = jobs_.Find(job_id);
  if (found == nullptr) {
    lock.unlock();  // finished, or unknown
    BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(job_id, /*with_events=*/false));
    return not_waiting(job);
  }
  v1::ExplainResponse out;
  const v1::Job& job = found->job;
  if (job.state() != v1::JOB_STATE_PENDING) return not_waiting(job);
  sched::UsageLedger ledger = ledger_;  // a look: only passes and Tick charge ledger_
  absl::Time now = clock_->Now();
  sched::ClusterView view = ViewWithUsageLocked(now, ledger);
  sched::Explanation ex = sched::Explain(view, policy_.policy, absl::ToUnixMillis(now), job_id);
  std::string outcome(sched::OutcomeName(ex.outcome));
  out.set_outcome(outcome);
  out.set_reason(ex.reason);
  out.set_position(ex.position);
  out.set_queue_length(ex.queue_length);
  for (const auto& ev : ex.evictions) out.add_would_evict(ev.victim);
  std::string text = ex.Text(view);
  for (const auto& [name, n] : nodes_.all()) {  // capacity an admin took away, and why
    if (!n.node.has_drain()) continue;
    const v1::NodeDrain& d = n.node.drain();
    text += "node " + name + " is drained (by " + d.by() +
            (d.reason().empty() ? "" : ": " + d.reason()) + "): it takes no new work\n";
  }
  out.set_text(text);
  return out;
}

v1::CoordinatorCommand JobManager::LaunchCommandLocked(const JobEntry& e,
                                                       uint32_t node_rank) const {
  std::vector<std::string> addresses;
  for (const auto& p : e.job.attempts().rbegin()->placement()) {
    const NodeRegistry::Entry* n = nodes_.Find(p.node());
    addresses.push_back(n == nullptr ? "" : n->node.address());
  }
  v1::CoordinatorCommand cmd =
      LaunchCommand(e.job, node_rank, e.live ? e.live->exec_secret : "",
                    LaunchTermsOf(policy_.policy, e.job.spec()), addresses);
  ArrayOfTaskLocked(e.job, cmd.mutable_launch()->mutable_array());
  return cmd;
}

void JobManager::FinishAttemptLocked(JobEntry& e, Txn& txn) {
  LiveAttempt live = jobs_.EndAttempt(e);
  v1::Attempt* a = e.job.mutable_attempts(e.job.attempts_size() - 1);
  const absl::Time now = clock_->Now();
  a->set_ended_ms(absl::ToUnixMillis(events::Ended(*a, live.nodes.size(), live.node_end, now)));
  a->set_exit_code(live.exit_code);
  a->set_term_signal(live.term_signal);
  const v1::JobSpec& spec = e.job.spec();
  AttemptEndInput in;
  in.outcome = live.outcome;
  in.outcome_reason = live.outcome_reason;
  in.exit_code = live.exit_code;
  in.term_signal = live.term_signal;
  in.restart_policy = spec.restart_policy();
  in.max_restarts = spec.max_restarts();
  in.failures = e.job.failures();
  in.evictions = e.job.evictions();
  in.restarts_in_a_row = e.job.restarts_in_a_row();
  in.drained = !a->drained_node().empty();
  in.requeued = !a->requeued_by().empty();
  in.checkpoint_step = a->checkpoint_step();
  in.reports_progress = a->reports_progress();
  in.ran = now - absl::FromUnixMillis(a->started_ms() ? a->started_ms() : a->scheduled_ms());
  if (const PriorityClass* cls = policy_.policy.Find(spec.priority_class())) {
    in.eviction_cooldown = [cls](uint32_t n) {
      return absl::Milliseconds(sched::CooldownMs(*cls, n));
    };
  }
  in.service = policy_.policy.ServiceRestartFor(spec.priority_class());
  in.retry_base = options_.retry_backoff_base;
  in.retry_max = options_.retry_backoff_max;
  in.cancel_reason = e.job.cancel_reason();
  in.cancel_requested_by = e.job.cancel_requested_by();
  const AttemptEnd end = DecideAttemptEnd(in);
  e.job.set_failures(end.failures);
  e.job.set_evictions(end.evictions);
  e.job.set_restarts_in_a_row(end.restarts_in_a_row);
  if (end.cooldown) e.job.set_cooldown_until_ms(DeadlineMs(absl::ToUnixMillis(now), *end.cooldown));
  if (end.job_exit_code) e.job.set_exit_code(*end.job_exit_code);
  a->set_end_reason(end.end_reason);
  if (!end.eviction.empty()) EvictedLocked(e, end.eviction, live.outcome_reason, txn);
  for (const AttemptEnd::Step& step : end.steps) {
    Transition(e, step.to, step.reason, step.actor, txn, step.code);
  }
  for (const auto& p : a->placement()) {
    txn.commands.emplace_back(p.node(), AckCommand(e.job.id(), a->number()));
  }
}

v1::ListNodesResponse JobManager::NodeListing() const {
  v1::ListNodesResponse out;
  for (auto& node : ListNodes()) *out.add_nodes() = std::move(node);
  for (const sched::TopologyLevel& l : policy()->topology_levels) {
    out.add_topology_levels(l.name + "=" + l.label);
  }
  return out;
}

std::vector<v1::Node> JobManager::ListNodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NodesOf(jobs_, nodes_.all());
}

}  // namespace baton
