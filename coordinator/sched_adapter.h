// Translation between the wire model (api.proto) and the scheduler's plain structs
// (coordinator/scheduler/), so that the scheduler core never sees protobuf. Used by the
// JobManager's pass and by admission. Pure functions; thread-safe.
#pragma once

#include <string>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "proto/api.pb.h"

namespace baton {

// CPU ids a node may report are below this (Linux's NR_CPUS is at most 8192): they index
// per-node tables, so a registration naming a larger one is refused.
inline constexpr uint32_t kMaxCpuId = 1 << 16;

sched::JobRequest RequestOf(const v1::JobSpec& spec);
// A registered node as the scheduler sees it (capacity, NUMA, GPUs, pool, taints).
sched::NodeInfo NodeInfoOf(const v1::Node& node);
// What a gang holds on one node of its placement.
sched::HeldNode HeldOf(const v1::NodeAssignment& p);
// The inverse, for a new attempt: node rank `node_rank` of a placement on `node`, as the
// attempt records it (its first rank is node_rank × ranks_per_node), with `agent_address`
// (host:port) reduced to the host the gang's ranks reach.
v1::NodeAssignment AssignmentOf(const sched::NodePlacement& np, const sched::NodeInfo& node,
                                uint32_t node_rank, uint32_t ranks_per_node,
                                const std::string& agent_address);

}  // namespace baton
