// Internal to the scheduler: gang placement over the whole cluster. A NodeIndex buckets
// schedulable nodes by eligibility group and free whole-GPU count, so a gang's best fit
// (fewest free GPUs that suffice) is found without scanning the cluster; FindNodes
// returns all of a gang's nodes or none. Also the static feasibility count and the nodes
// a blocked head-of-line job reserves. Used by plan.cc and preemption.cc.
// Not thread-safe: one pass, one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "absl/container/btree_set.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

class NodeIndex {
 public:
  explicit NodeIndex(const Pass& pass);
  // Moves the node to the bucket of its current free whole-GPU count.
  void Update(const Pass& pass, uint32_t node);

  // For one (filter, whole GPUs, topology level): per domain of the level, how many of
  // its eligible schedulable nodes have at least that many whole GPUs free. Counted
  // once, when first asked for, and kept current by Update, so that a topology-bound
  // gang ranks the domains without visiting thousands of groups each time.
  struct DomainFree {
    uint32_t filter = 0, gpus = 0;
    int32_t level = 0;
    std::vector<uint32_t> free;                      // per domain
    std::vector<absl::btree_set<uint32_t>> by_free;  // [count]: the domains with that many
    uint64_t unlabelled = 0;                         // such nodes without the level's label
  };
  const DomainFree& FreeByDomain(Pass& pass, const Shape& s);
  const absl::btree_set<uint32_t>& Bucket(uint32_t group, uint32_t free_gpus) const {
    return buckets_[group][free_gpus];
  }
  uint32_t max_gpus() const { return max_gpus_; }
  // Calls f(node) (true: stop, and ForEach returns true) for the nodes with `free_gpus`
  // free whole GPUs in the filter's eligible groups (`groups`, ascending), group by group
  // in ascending order.
  template <typename F>
  bool ForEach(Pass& pass, uint32_t filter, const std::vector<uint32_t>& groups, uint32_t free_gpus,
               F f) const {
    return ForEachGroup(pass, filter, groups, free_gpus, [&](uint32_t g) {
      for (uint32_t node : buckets_[g][free_gpus]) {
        if (f(node)) return true;
      }
      return false;
    });
  }
  // Calls f(group) (true: stop) for the eligible groups with nodes of `free_gpus` free
  // whole GPUs, ascending: over the eligible groups or over the groups that have such
  // nodes, whichever list is shorter (a cluster labelled by its switch tree has thousands
  // of groups, most with no node of a given count).
  template <typename F>
  bool ForEachGroup(Pass& pass, uint32_t filter, const std::vector<uint32_t>& groups,
                    uint32_t free_gpus, F f) const {
    const absl::btree_set<uint32_t>& filled = filled_[free_gpus];
    if (groups.size() <= filled.size()) {
      for (uint32_t g : groups) {
        if (!buckets_[g][free_gpus].empty() && f(g)) return true;
      }
      return false;
    }
    for (uint32_t g : filled) {
      if (Eligible(pass, filter, g) && f(g)) return true;
    }
    return false;
  }

 private:
  static uint32_t FreeWhole(const Pass& pass, uint32_t node);
  void Put(uint32_t group, uint32_t count, uint32_t node);
  void Take(uint32_t group, uint32_t count, uint32_t node);
  std::vector<std::vector<absl::btree_set<uint32_t>>> buckets_;  // [group][free whole GPUs]
  std::vector<absl::btree_set<uint32_t>> filled_;  // [free whole GPUs]: groups with such nodes
  std::vector<uint8_t> count_;                     // each node's bucket
  uint32_t max_gpus_ = 0;
  std::deque<DomainFree> domain_free_;  // a deque: FreeByDomain's references stay valid
  void MoveDomains(const Pass& pass, uint32_t group, uint32_t from, uint32_t to);
};

// `s.nodes` distinct nodes the gang fits now, best fit first, or empty: all or nothing.
// Nodes reserved for others at `class_value` or above are skipped.
std::vector<uint32_t> FindNodes(Pass& pass, NodeIndex& index, const Shape& s, int32_t class_value,
                                JobId job);
// Places the gang on `nodes` (from FindNodes) and keeps the index current.
std::vector<NodePlacement> CommitGang(Pass& pass, NodeIndex& index, const Shape& s,
                                      const std::vector<uint32_t>& nodes);
// Nodes in the cluster (schedulable or not) whose hardware and labels could hold one
// gang member.
uint64_t FeasibleNodes(Pass& pass, const Shape& s);
// The nodes a blocked job waits on: eligible, usable, able to hold it when empty, most
// free GPUs first; empty when fewer than `s.nodes` qualify.
std::vector<uint32_t> PickReservation(Pass& pass, NodeIndex& index, const Shape& s,
                                      int32_t class_value, JobId job);

}  // namespace baton::sched::internal
