// Plan: one scheduling pass, a pure and deterministic function of the cluster view, the
// policy and the time. Called by the coordinator's scheduler thread (and by Explain);
// the caller applies the Decisions and reports back through the next view (README.md).
// Thread-safe: no state; concurrent calls on shared const inputs are fine.
#pragma once

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched {

// Walks the pending jobs in queue order (order.h) and decides each: infeasible, in
// cooldown, over quota, placed (best fit, whole gang), reserved (victims leaving, or the
// blocked head of its pool's line) or waiting for capacity. Ties are broken by id; the
// same inputs always give the same Decisions.
Decisions Plan(const ClusterView& view, const Policy& policy, Time now);

}  // namespace baton::sched
