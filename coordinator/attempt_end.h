// What becomes of a job once its attempt has ended on every node: a pure function of how
// the attempt ended, the job's counters, its spec and the policy's backoffs — no clock,
// no store, no lock. JobManager::FinishAttemptLocked gathers the input and applies the
// result (the attempt's end reason, the counters, the cooldown, the eviction record and
// the job's transitions, in order).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/policy.h"
#include "proto/api.pb.h"

namespace baton {

// Why the attempt ended, as the coordinator decided while it ran.
enum class AttemptOutcome { kNone, kFailed, kCancelled, kNodeLost, kMaxRuntime, kEvicted };

struct AttemptEndInput {
  AttemptOutcome outcome = AttemptOutcome::kNone;
  std::string outcome_reason;
  int32_t exit_code = 0;  // how the attempt's processes ended (the first failure's)
  int32_t term_signal = 0;
  v1::RestartPolicy restart_policy = v1::RESTART_POLICY_NEVER;
  uint32_t max_restarts = 0;
  // The job's counters before this end.
  uint32_t failures = 0;
  uint32_t evictions = 0;
  uint32_t restarts_in_a_row = 0;
  bool drained = false;   // an eviction for a drain of one of its nodes: the operator's doing
  bool requeued = false;  // stopped by a requeue: its owner's (or an admin's) doing
  int64_t checkpoint_step = -1;
  bool reports_progress = false;
  absl::Duration ran;  // since the attempt started (or was scheduled)
  // The cooldown of the n-th eviction for the job's class; null: none.
  std::function<absl::Duration(uint32_t evictions)> eviction_cooldown;
  Policy::ServiceRestart service;  // a service's restart backoff (its class's)
  absl::Duration retry_base, retry_max;
  std::string cancel_reason, cancel_requested_by;  // a cancelled job's
};

struct AttemptEnd {
  struct Step {
    v1::JobState to;
    std::string reason;
    std::string actor;
    std::string code;  // the event's code ("failure", "service_exit"; "" none)
  };
  std::string end_reason;  // the attempt's
  uint32_t failures = 0;   // the job's counters after it
  uint32_t evictions = 0;
  uint32_t restarts_in_a_row = 0;
  std::optional<absl::Duration> cooldown;  // the job waits this long from now; unset: as it was
  std::optional<int32_t> job_exit_code;    // set for a job that ends here
  std::string eviction;     // recorded as an eviction of this kind ("preempted", "drained",
                            // "node_lost"); "" none
  std::vector<Step> steps;  // the job's transitions, in order
};

AttemptEnd DecideAttemptEnd(const AttemptEndInput& in);

}  // namespace baton
