#include "coordinator/attempt_tracker.h"

#include <signal.h>

#include <algorithm>
#include <string>
#include <utility>

#include "coordinator/events.h"

namespace baton {

bool LiveAttempt::AllExited() const {
  for (const auto& [node, phase] : nodes) {
    if (phase != AttemptPhase::kExited) return false;
  }
  return true;
}

std::optional<LiveAttempt> RecoverAttempt(const v1::Job& job, absl::Time now) {
  const v1::JobState s = job.state();
  const bool live =
      s == v1::JOB_STATE_SCHEDULED || s == v1::JOB_STATE_RUNNING || s == v1::JOB_STATE_PREEMPTING;
  if (!live || job.attempts_size() == 0) return std::nullopt;
  const v1::Attempt& last = *job.attempts().rbegin();
  LiveAttempt a;
  for (const auto& p : last.placement()) {
    a.nodes[p.node()] =
        s == v1::JOB_STATE_SCHEDULED ? AttemptPhase::kLaunching : AttemptPhase::kRunning;
  }
  if (!job.cancel_requested_by().empty()) {
    a.outcome = AttemptOutcome::kCancelled;
    a.kill_signal = SIGTERM;
    a.kill_grace = job.spec().grace_seconds();
  } else if (s == v1::JOB_STATE_PREEMPTING) {
    a.outcome = AttemptOutcome::kEvicted;
    a.outcome_reason = !last.requeued_by().empty() ? "requeued by " + last.requeued_by()
                       : !last.drained_node().empty()
                           ? "node " + last.drained_node() + " drained"
                           : "evicted for job " + std::to_string(last.evicted_for());
    a.evicting_for = last.evicted_for();
    a.kill_signal = SIGUSR1;
    a.kill_grace = job.spec().grace_seconds();
    a.preempted = last.preempted_ms() ? absl::FromUnixMillis(last.preempted_ms()) : now;
    a.preempt_deadline = last.preempt_deadline_ms()
                             ? absl::FromUnixMillis(last.preempt_deadline_ms())
                             : now + absl::Seconds(a.kill_grace);
  }
  return a;
}

StopOrder OrderStop(LiveAttempt& live, int signal, uint32_t grace, std::string reason) {
  if (live.kill_signal == 0) {
    live.kill_signal = signal;
    live.kill_grace = grace;
  }
  return StopOrder{signal, grace, std::move(reason), UnendedParts(live)};
}

std::vector<std::string> UnendedParts(const LiveAttempt& live) {
  std::vector<std::string> out;
  for (const auto& [node, phase] : live.nodes) {
    if (phase != AttemptPhase::kExited) out.push_back(node);
  }
  return out;
}

std::optional<std::vector<std::string>> BeginEviction(LiveAttempt& live, std::string reason,
                                                      uint64_t preemptor, absl::Duration grace,
                                                      absl::Time now) {
  if (live.outcome != AttemptOutcome::kNone) return std::nullopt;
  live.outcome = AttemptOutcome::kEvicted;
  live.outcome_reason = std::move(reason);
  live.evicting_for = preemptor;
  live.kill_signal = SIGUSR1;
  live.kill_grace = static_cast<uint32_t>(absl::ToInt64Seconds(grace));
  live.preempted = now;
  live.preempt_deadline = now + grace;
  return UnendedParts(live);
}

absl::Duration GraceCap(absl::Duration grace, double cap_factor) {
  return cap_factor * std::max(absl::Seconds(1), grace);
}

std::optional<absl::Time> ExtendedDeadline(const LiveAttempt& live, absl::Duration grace,
                                           double cap_factor, absl::Time now) {
  grace = std::max(absl::Seconds(1), grace);
  const absl::Time cap = live.preempted + GraceCap(grace, cap_factor);
  const absl::Time wanted = std::min(cap, now + grace);
  if (wanted - live.preempt_deadline < std::max(absl::Milliseconds(250), grace / 4)) {
    return std::nullopt;
  }
  return wanted;
}

std::optional<StopOrder> StopForMaxRuntime(LiveAttempt& live, std::optional<absl::Time> started,
                                           absl::Duration max_runtime, uint32_t grace,
                                           absl::Time now) {
  if (max_runtime <= absl::ZeroDuration() || !started || now - *started < max_runtime ||
      live.outcome != AttemptOutcome::kNone) {
    return std::nullopt;
  }
  live.outcome = AttemptOutcome::kMaxRuntime;
  live.outcome_reason =
      "exceeded its max runtime of " + std::to_string(absl::ToInt64Seconds(max_runtime)) + " s";
  return OrderStop(live, SIGTERM, grace, live.outcome_reason);
}

ReportEffects ApplyReport(LiveAttempt& live, const std::string& node, const v1::AttemptReport& r,
                          bool registering, uint32_t failure_grace) {
  ReportEffects out;
  const bool running = r.phase() == v1::AttemptReport::PHASE_RUNNING;
  if (running && r.has_saving_step()) {
    live.saving_step = r.saving_step();
    live.saving_node = node;
  } else if (live.saving_node == node) {
    live.saving_step.reset();
  }
  AttemptPhase& phase = live.nodes[node];
  if (phase == AttemptPhase::kExited) return out;  // its end was heard already
  if (running) {
    const bool resend = registering || phase != AttemptPhase::kRunning;
    phase = AttemptPhase::kRunning;
    if (live.outcome == AttemptOutcome::kEvicted) {
      out.resend_preempt = resend;
      out.extend_grace = live.saving_step.has_value();
    } else {
      out.resend_stop = live.kill_signal != 0 && resend;
    }
    out.all_running = true;
    for (const auto& [n, p] : live.nodes) out.all_running &= p == AttemptPhase::kRunning;
    return out;
  }
  if (r.time_ms() > 0) live.node_end[node] = absl::FromUnixMillis(r.time_ms());
  const bool failed =
      r.exit_code() != 0 || r.term_signal() != 0 || r.phase() == v1::AttemptReport::PHASE_REJECTED;
  if (r.stopped_disconnected() && live.outcome == AttemptOutcome::kNone) {
    // The agent stopped it for want of us (a partition, our outage): like a lost node, it
    // resumes from its checkpoint, and the rest of its gang stops too.
    live.outcome = AttemptOutcome::kNodeLost;
    live.outcome_reason = r.message();
    out.stop = OrderStop(live, SIGTERM, failure_grace, live.outcome_reason);
  } else if (failed && live.outcome == AttemptOutcome::kNone) {
    live.outcome = AttemptOutcome::kFailed;
    live.exit_code = r.exit_code();
    live.term_signal = r.term_signal();
    live.outcome_reason =
        "rank(s) on " + node + " failed: " +
        (r.message().empty() ? "exit code " + std::to_string(r.exit_code()) : r.message());
    out.stop = OrderStop(live, SIGTERM, failure_grace, live.outcome_reason);
  } else if (failed && live.exit_code == 0 && live.term_signal == 0) {
    // Stopping already (eviction, cancel): keep how it ended, for the attempt's record.
    live.exit_code = r.exit_code();
    live.term_signal = r.term_signal();
  }
  phase = AttemptPhase::kExited;
  out.ended = live.AllExited();
  return out;
}

bool RecordProgress(v1::Attempt& a, const v1::AttemptReport& r, int64_t now_ms) {
  bool changed = false;
  if (r.reports_progress() && !a.reports_progress()) {
    a.set_reports_progress(true);
    changed = true;
  }
  if (r.checkpoint_step() > a.checkpoint_step()) {
    // When it was committed: least-lost-work eviction and the work lost count from here.
    a.set_checkpoint_step(r.checkpoint_step());
    a.set_checkpoint_time_ms(events::CheckpointTimeMs(a, r.checkpoint_time_ms(), now_ms));
    changed = true;
  }
  return changed;
}

ReportEffects PartLost(LiveAttempt& live, const std::string& node, const std::string& reason,
                       uint32_t failure_grace) {
  ReportEffects out;
  auto part = live.nodes.find(node);
  if (part == live.nodes.end() || part->second == AttemptPhase::kExited) return out;
  if (live.outcome == AttemptOutcome::kNone) {
    live.outcome = AttemptOutcome::kNodeLost;
    live.outcome_reason = reason;
    out.stop = OrderStop(live, SIGTERM, failure_grace, reason);
  }
  part->second = AttemptPhase::kExited;
  out.ended = live.AllExited();
  return out;
}

absl::Duration ReplaceAfter(std::optional<absl::Duration> stop_after_disconnect,
                            absl::Duration grace, absl::Duration margin,
                            absl::Duration lost_after) {
  if (!stop_after_disconnect) return lost_after;
  return *stop_after_disconnect + grace + margin;
}

ReportEffects PartUnmentioned(LiveAttempt& live, const std::string& node, uint32_t attempt,
                              uint32_t failure_grace) {
  auto part = live.nodes.find(node);
  if (part != live.nodes.end() && part->second == AttemptPhase::kLaunching &&
      live.kill_signal == 0) {
    ReportEffects out;
    out.resend_launch = true;
    return out;
  }
  return PartLost(live, node,
                  "agent on " + node + " no longer knows attempt " + std::to_string(attempt) +
                      " (agent restarted)",
                  failure_grace);
}

}  // namespace baton
