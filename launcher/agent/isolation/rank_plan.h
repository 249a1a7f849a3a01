// The launch plan of an attempt's ranks on one node (docs/isolation.md, "Per-rank
// binding"): for each local rank, the CPUs and memory nodes it runs on, from the
// scheduler's RankBinding (its NUMA node; the cores charged to an inference rank), the
// attempt's cpuset and the node's NUMA topology. The Isolator plans it with each cpuset it
// applies; the agent hands each rank its ProcessBinding (rank_bind.h). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "launcher/agent/rank_bind.h"
#include "proto/api.pb.h"

namespace baton {

struct RankPlan {
  int32_t numa = -1;           // the scheduler's NUMA node for the rank; -1: spans
  std::vector<uint32_t> cpus;  // where it runs: its Cpus_allowed_list
  std::vector<uint32_t> mems;  // where its memory comes from
  ProcessBinding bind;         // what the rank sets on itself before exec
};

// One plan per local rank (`local_ranks` of them; a rank `bindings` does not cover
// spans). `attempt_cpus`/`attempt_mems`: the attempt's cpuset (empty: the whole node, as
// without cgroups). A rank with charged CPUs, all of them the attempt's, runs on exactly
// those; a rank on NUMA node N runs on N's CPUs of the attempt, memory bound to N (when
// the attempt has none of N's CPUs, it spans); a spanning rank runs on the attempt's CPUs
// and memory nodes, as its cpuset decides.
std::vector<RankPlan> PlanRanks(const v1::Inventory& inventory,
                                const std::vector<uint32_t>& attempt_cpus,
                                const std::vector<uint32_t>& attempt_mems,
                                const std::vector<v1::RankBinding>& bindings, uint32_t local_ranks);

// The plans as reported (IsolationLimits.ranks, shown by `baton status`).
void SetRankPlacements(const std::vector<RankPlan>& plans, v1::IsolationLimits* limits);

}  // namespace baton
