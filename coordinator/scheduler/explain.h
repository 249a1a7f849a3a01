// Explain and Shares: what `baton explain JOB` and `baton share` show. Explain runs the
// very Plan the scheduler runs and reads this job's part of it, so the victims it names
// are the victims the next pass with the same view evicts. For a topology-bound job
// waiting for room it adds what would free a domain ("evicting 2 job(s) (12, 15) would
// free leaf-7"), a question the pass does not ask. Called by the coordinator's
// service on request. Thread-safe: no state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched {

struct Explanation {
  JobId job = 0;
  bool pending = false;  // false: not among view.pending (running, or unknown)
  bool running = false;
  Outcome outcome = Outcome::kWaitForCapacity;
  std::string reason;     // the blocking constraint, or where it goes
  uint32_t position = 0;  // 1-based place in the queue
  uint32_t queue_length = 0;
  uint32_t ahead_in_class = 0;             // jobs of its class before it
  std::vector<Eviction> evictions;         // whom the next pass evicts for it
  std::optional<Reservation> reservation;  // room held for it
  std::optional<Placement> placement;      // where it starts, when placed

  // Several lines for a terminal.
  std::string Text(const ClusterView& view) const;
};

Explanation Explain(const ClusterView& view, const Policy& policy, Time now, JobId job);

// One tenant's standing for `baton share`.
struct TenantShare {
  std::string tenant;
  double weight = 1;
  double usage_gpu_seconds = 0;  // decayed
  double usage_share = 0;        // of every tenant's decayed usage, 0..1
  double weight_share = 0;       // of the weights of the tenants shown, 0..1
  double running_gpus = 0;       // an MPS share counts as its fraction of a GPU
  double pending_gpus = 0;
  std::optional<Resources> nominal;
};

// Every tenant the policy names or the view mentions, by name.
std::vector<TenantShare> Shares(const ClusterView& view, const Policy& policy);

}  // namespace baton::sched
