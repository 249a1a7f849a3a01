// Internal to the scheduler: the human text of every outcome and eviction, and the
// static infeasibility checks whose findings that text reports. Used by plan.cc; what
// `baton queue`, `baton status` and `baton explain` show comes from here.
// Not thread-safe: one pass, one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

// Why the job can never run here ("" when it can): policy limits, MIG rules, pool
// classes, its tenant's quota, or no node able to hold it.
const Reason& InfeasibleReason(Pass& pass, const Job& job);
std::string CooldownReason(const Pass& pass, const Job& job);
// The same text (shared) for every job of a tenant while the tenant's use stays.
Reason QuotaReason(Pass& pass, const Job& job, QuotaBook::Verdict verdict);
std::string PlacedReason(const Pass& pass, const Job& job, const Placement& placement);
std::string AwaitingReason(uint32_t victims_leaving);
std::string PreemptingReason(const std::vector<Eviction>& evictions, JobId preemptor);
std::string HeadOfLineReason(Pass& pass, const Job& job, const Reservation& r,
                             bool preemption_deferred);
// One text (shared) per shape, another where a preemption search was deferred.
Reason CapacityReason(Pass& pass, const Job& job, bool preemption_deferred);
Eviction MakeEviction(const Pass& pass, const Gang& victim, const Job& preemptor,
                      EvictionReason reason);

}  // namespace baton::sched::internal
