// Scheduler: the scheduler's world kept from pass to pass. The coordinator tells it what
// changed (nodes, running gangs, pending jobs, tenant usage) and asks for a pass;
// `Plan(now)` returns exactly what `sched::Plan(View(), policy, now)` returns — Plan stays
// the reference, and tests/coordinator/scheduler_incremental_test.cc holds the two equal
// over random worlds and random sequences of changes — without rebuilding what did not
// change: the node tables (groups, hardware classes, GPU entries, topology) are built
// again only when a node changes, and a pending job is interned (class, tenant, shape)
// once, when it arrives, and kept in submission order, so that the queue order is the
// linear bucket sort.
// Not thread-safe: the caller serializes changes and passes.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched {

class Scheduler {
 public:
  explicit Scheduler(Policy policy);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // A node by name: replaced where it stands in the node order, or added last.
  void UpsertNode(NodeInfo node);
  void RemoveNode(const std::string& name);
  // A gang that holds resources, by job id (RunningGang in cluster_view.h).
  void UpsertRunning(RunningGang gang);
  void RemoveRunning(JobId id);
  // A pending job, by id: added, or replaced with what changed (cooldown, hold,
  // reservation...).
  void UpsertPending(PendingJob job);
  void RemovePending(JobId id);
  // Decayed GPU-seconds per tenant (UsageLedger::Snapshot), as ClusterView::usage.
  void SetUsage(std::map<std::string, double> usage);

  // Takes in the changes since the last pass: the node tables built (again, if a node
  // changed other than connecting or disconnecting), arrived jobs interned, gangs'
  // names resolved. Plan does it first; a caller that has just loaded its world (a
  // restart) may call it then, so that the first pass is only a pass.
  void Prepare(Time now);
  // One pass at `now`. Decisions name nodes by their index in View().nodes.
  Decisions Plan(Time now);
  // The world as a ClusterView: nodes in order, gangs and pending jobs in an order of
  // the Scheduler's (Plan does not depend on theirs).
  ClusterView View() const;
  const Policy& policy() const;
  size_t pending_size() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace baton::sched
