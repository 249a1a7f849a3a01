#include "coordinator/attempt_tracker.h"

#include <signal.h>

#include <utility>

namespace baton {

bool LiveAttempt::AllExited() const {
  for (const auto& [node, phase] : nodes) {
    if (phase != AttemptPhase::kExited) return false;
  }
  return true;
}

StopOrder OrderStop(LiveAttempt& live, int signal, uint32_t grace, std::string reason) {
  if (live.kill_signal == 0) {
    live.kill_signal = signal;
    live.kill_grace = grace;
  }
  StopOrder order{signal, grace, std::move(reason), {}};
  for (const auto& [node, phase] : live.nodes) {
    if (phase != AttemptPhase::kExited) order.nodes.push_back(node);
  }
  return order;
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

}  // namespace baton
