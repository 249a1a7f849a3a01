// What the scheduler sees of the coordinator: its input (sched::ClusterView) built from the
// job table and the node registry, the cluster's shape for admission, and the preemption
// reservations a pass hands to the next. Pure functions of the tables, which the caller
// reads under its lock (the JobManager's); no clock, no store.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job_table.h"
#include "coordinator/node_registry.h"
#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"
#include "coordinator/spec_validation.h"

namespace baton {

// Preemption reservations of the last pass, by job: the names of the nodes held for it
// (given back to the next pass; coordinator/scheduler/README.md).
using ReservedNodes = std::map<uint64_t, std::vector<std::string>>;

// The largest shapes the known nodes offer (every node, connected or not).
ClusterShape ShapeOf(const NodeRegistry::Table& nodes);

// A service waiting out its restart backoff at `now` keeps its last placement: nobody
// takes those GPUs and cores meanwhile (unless one of its nodes was drained).
bool HoldsForRestart(const JobEntry& e, const NodeRegistry::Table& nodes, absl::Time now);

// The scheduler's input at `now`: the nodes not lost, every gang holding resources (live
// attempts by the nodes where they still run, services held for their restart), and the
// queue in its order with each job's reservation. Tenants' usage is not filled in.
// `is_array` says which ids are arrays (a dependency's wait text names them so). A waiting
// share runs as the MPS service user its class names in `policy` (none: its owner); a
// running one as its attempt ran (RunAsOf).
sched::ClusterView ViewOf(const JobTable& jobs, const NodeRegistry::Table& nodes,
                          const ReservedNodes& reserved, absl::Time now,
                          const std::function<bool(uint64_t)>& is_array = {},
                          const sched::Policy* policy = nullptr);

// The MPS service user a share of `spec` runs as under `policy` (its class's mps_user), or
// "" when it runs as its owner (not a share, or a class naming none).
std::string ServiceUserFor(const sched::Policy& policy, const v1::JobSpec& spec);

// Every known node as `baton nodes` shows it: its record, with what the live attempts'
// parts that still run there take of it (CPU, memory, GPUs), their jobs, and their
// isolation as the node's agent reported it.
std::vector<v1::Node> NodesOf(const JobTable& jobs, const NodeRegistry::Table& nodes);

// The reservations of a pass's decisions (preemptions only), by node name.
ReservedNodes ReservationsOf(const sched::Decisions& d, const sched::ClusterView& view);

// A master port for attempt `attempt` of `job_id` whose first node is `first_node`, unique
// among the other live attempts that start on that node.
uint32_t MasterPortFor(const JobTable& jobs, uint64_t job_id, uint32_t attempt,
                       const std::string& first_node);

// The attempt that `placement` (a pass's, over `view`) starts for `job`, as it is stored:
// numbered one past the job's last, scheduled at `now`, no checkpoint yet, a master port
// from MasterPortFor, and node rank i on the placement's i-th node with that node's agent
// address from `nodes`. The job's attempts are not changed.
v1::Attempt NewAttempt(const JobTable& jobs, const NodeRegistry::Table& nodes, const v1::Job& job,
                       const sched::Placement& placement, const sched::ClusterView& view,
                       absl::Time now);

// What a pass's outcome for a job that it did not place changes: a pending job shows why it
// waits (its message), and the event log hears only when the kind of wait changes (not
// each pass's wording; any event about the job since then counts as a change). Returns the
// event to log, or nothing.
std::optional<v1::Event> NoteWait(JobEntry& e, const sched::JobOutcome& o);

}  // namespace baton
