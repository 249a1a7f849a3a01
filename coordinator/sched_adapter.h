// Translation between the wire model (api.proto) and the scheduler's plain structs
// (coordinator/scheduler/), so that the scheduler core never sees protobuf. Used by the
// JobManager's pass and by admission. Pure functions; thread-safe.
#pragma once

#include "coordinator/scheduler/cluster_view.h"
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

}  // namespace baton
