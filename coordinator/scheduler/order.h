// Internal to the scheduler: the queue order of one pass. Class first (strict, highest
// value first); inside a class, jobs whose tenant stays within its nominal quota (jobs
// of the tenant ahead of them counted) before jobs that would borrow; then fair share
// (decayed GPU-seconds / weight, lowest first); then submit time; then id.
// Used by plan.cc and scheduler.cc. Pure; not thread-safe only because Pass is not.
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

// Puts pass.jobs in queue order.
void OrderQueue(Pass& pass);
// The same order from jobs given in (submitted, id) order, as Scheduler keeps them:
// fills pass.jobs with them by one stable counting sort on (class, fair share), reading
// `by_submission` front to back (a million jobs are not gathered at random), and marks
// the pass so that OrderQueue only finishes the order (borrowers after the rest).
void OrderFromSubmission(Pass& pass, const std::vector<Job>& by_submission);

}  // namespace baton::sched::internal
