#include "coordinator/attempt_end.h"

#include <signal.h>

#include "common/resources.h"

namespace baton {

AttemptEnd DecideAttemptEnd(const AttemptEndInput& in) {
  AttemptEnd out;
  out.failures = in.failures;
  out.evictions = in.evictions;
  out.restarts_in_a_row = in.restarts_in_a_row;
  const std::string actor = "coordinator";
  const int32_t code = in.term_signal ? 128 + in.term_signal : in.exit_code;
  // Services restart whatever their exit (an exit 0 is no failure), after a backoff that
  // doubles with each restart in a row and starts over after a healthy run.
  auto restart_service = [&](const std::string& why, bool failure, const std::string& event) {
    if (failure) ++out.failures;
    const bool healthy = in.ran >= absl::Seconds(in.service.healthy_after_s);
    out.restarts_in_a_row = healthy ? 1 : in.restarts_in_a_row + 1;
    const absl::Duration wait = in.service.Backoff(out.restarts_in_a_row);
    out.cooldown = wait;
    const int64_t ms = absl::ToInt64Milliseconds(wait);
    out.steps.push_back({v1::JOB_STATE_PENDING,
                         why + "; restarting in " + std::to_string(ms / 1000) + "." +
                             std::to_string(ms % 1000 / 100) + " s, its GPUs held",
                         actor, event});
  };
  auto retry = [&](const std::string& why, bool counts_as_failure, const std::string& event) {
    if (counts_as_failure) ++out.failures;
    out.cooldown =
        DoublingBackoff(in.retry_base, in.retry_max, counts_as_failure ? out.failures : 0);
    out.steps.push_back({v1::JOB_STATE_PENDING, why, actor, event});
  };
  switch (in.outcome) {
    case AttemptOutcome::kEvicted: {
      // Evictions are counted apart from failures; the cooldown doubles with each one. A
      // drain is the operator's doing, and a requeue its owner's, not a higher class's: no
      // count, no cooldown (and a requeue is no eviction at all).
      const bool asked = in.drained || in.requeued;
      if (!asked) ++out.evictions;
      const absl::Duration wait = in.eviction_cooldown && !asked
                                      ? in.eviction_cooldown(out.evictions)
                                      : absl::ZeroDuration();
      out.cooldown = wait;
      const std::string how = in.term_signal == 0 && in.exit_code == 0 ? "checkpointed and exited"
                              : in.term_signal == SIGKILL || in.exit_code == 128 + SIGKILL
                                  ? "killed after its grace period"
                                  : "exited with code " + std::to_string(code);
      const std::string resume =
          in.checkpoint_step >= 0 ? "resumes from step " + std::to_string(in.checkpoint_step)
          : in.reports_progress   ? "no checkpoint: restarts from the beginning"
                                  : "checkpoint unknown: the job does not report progress";
      out.end_reason = (in.requeued ? "requeued: " : "evicted: ") + how + "; " + resume;
      out.eviction = in.requeued ? "" : in.drained ? "drained" : "preempted";
      out.steps.push_back({v1::JOB_STATE_COOLDOWN,
                           out.end_reason + "; cooldown " +
                               std::to_string(absl::ToInt64Milliseconds(wait) / 1000) + " s",
                           actor, ""});
      if (wait == absl::ZeroDuration()) {
        out.steps.push_back({v1::JOB_STATE_PENDING, "cooldown over", actor, ""});
      }
      break;
    }
    case AttemptOutcome::kCancelled:
      out.end_reason = "cancelled";
      out.steps.push_back({v1::JOB_STATE_CANCELLED, in.cancel_reason, in.cancel_requested_by, ""});
      break;
    case AttemptOutcome::kNodeLost:
      out.end_reason = in.outcome_reason;
      out.eviction = "node_lost";
      retry(in.outcome_reason + "; requeued from its last checkpoint", false, "");
      break;
    case AttemptOutcome::kMaxRuntime:
      out.end_reason = in.outcome_reason;
      out.job_exit_code = code ? code : 128 + SIGTERM;
      out.steps.push_back({v1::JOB_STATE_FAILED, in.outcome_reason, actor, ""});
      break;
    case AttemptOutcome::kFailed: {
      out.end_reason = "failed: " + in.outcome_reason;
      const bool again =
          in.restart_policy == v1::RESTART_POLICY_ALWAYS ||
          (in.restart_policy == v1::RESTART_POLICY_ON_FAILURE && in.failures < in.max_restarts);
      if (in.restart_policy == v1::RESTART_POLICY_ALWAYS) {
        restart_service(in.outcome_reason, /*failure=*/true, "failure");
      } else if (again) {
        retry(in.outcome_reason + "; retry " + std::to_string(in.failures + 1) + " of " +
                  std::to_string(in.max_restarts),
              true, "failure");
      } else {
        out.job_exit_code = code;
        out.steps.push_back({v1::JOB_STATE_FAILED, in.outcome_reason, actor, ""});
      }
      break;
    }
    case AttemptOutcome::kNone:
      out.end_reason = "succeeded";
      if (in.restart_policy == v1::RESTART_POLICY_ALWAYS) {
        restart_service("service exited 0", /*failure=*/false, "service_exit");
      } else {
        out.job_exit_code = 0;
        out.steps.push_back({v1::JOB_STATE_SUCCEEDED, "every rank exited 0", actor, ""});
      }
      break;
  }
  return out;
}

}  // namespace baton
