// Internal to the scheduler: the victim search. Victims are whole running gangs of
// strictly lower, preemptible classes (a borrowing preemptor only takes from its own
// tenant or from borrowers), or preemptible borrowers of other tenants at the
// preemptor's class or below when the preemptor runs within its nominal quota (reclaim).
// Gangs inside their minimum runtime or already leaving are never victims. On each node,
// victims are taken cheapest first until the gang member fits, then reprieved where they
// can stay; across nodes the least lost work (GPUs × seconds since the last committed
// checkpoint) wins, then the fewest victims, then the lowest node index.
// Used by plan.cc. Not thread-safe: one pass, one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

struct Victim {
  uint32_t gang = 0;
  EvictionReason reason = EvictionReason::kHigherClass;
};

struct PreemptionPlan {
  std::vector<Victim> victims;  // ascending job id
  std::vector<uint32_t> nodes;  // where the preemptor goes once they leave
};

struct Preemptor {
  const Job* job = nullptr;
  bool within_nominal = false;  // its tenant stays within nominal quota with it
  // Explain's question, not the pass's: every gang of a preemptible class that is not
  // leaving may be a victim, whatever its class, tenant or runtime.
  bool hypothetical = false;
};

// True and the plan when some victim set makes room; false when none does.
bool FindVictims(Pass& pass, const Preemptor& who, PreemptionPlan* plan);

// False when no gang in the nodes the preemptor may use could be its victim: a cheap
// check, so that hopeless searches neither cost time nor count against the budget.
bool MayPreemptAnyone(Pass& pass, const Preemptor& who);

}  // namespace baton::sched::internal
