// Internal to the scheduler: does one gang member fit one node, and where on it — which
// GPUs (whole or MIG slices of the asked profile, never on a physical GPU the other kind
// of job uses), which NUMA node per rank (each rank's GPUs, cores and memory on one NUMA
// node whenever the node's hardware allows it; training away from inference's NUMA
// nodes when there is a choice; best fit). Used by placement and preemption.
// Not thread-safe: one pass, one thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/pass_state.h"

namespace baton::sched::internal {

constexpr uint8_t kSpan = 0xff;  // a rank group spread over the node's NUMA nodes

struct NodeChoice {
  std::vector<std::pair<uint8_t, uint64_t>> groups;  // per rank group: slot, GPU entries
};

// Free entries of the node the shape may take.
uint64_t KindMask(const Pass& pass, uint32_t node, const NodeFree& free, const Shape& s);
// Fits one gang member onto `free` (which it then charges); `choice` may be null.
bool FitNode(Pass& pass, uint32_t node, NodeFree& free, const Shape& s, NodeChoice* choice);
// Could the node, empty, hold one gang member? (Infeasibility and reservations.)
bool HwFits(Pass& pass, uint32_t node, const Shape& s);
// Fits one gang member into pass.free[node] and says where (cores picked for services).
// The caller has checked that it fits.
NodePlacement CommitNode(Pass& pass, uint32_t node, const Shape& s);

}  // namespace baton::sched::internal
