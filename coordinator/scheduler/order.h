// Internal to the scheduler: the queue order of one pass. Class first (strict, highest
// value first); inside a class, jobs whose tenant stays within its nominal quota (jobs
// of the tenant ahead of them counted) before jobs that would borrow; then fair share
// (decayed GPU-seconds / weight, lowest first); then submit time; then id.
// Used by plan.cc. Pure; not thread-safe only because Pass is not.
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

// Puts pass.jobs in queue order.
void OrderQueue(Pass& pass);

}  // namespace baton::sched::internal
