// Workload traces for the simulator: CSV (a header row naming the columns) or JSONL (one
// object per line, the same names as keys). Times are seconds from the start of the trace
// (a number, or a duration like "2h"). Columns:
//   required: submit, tenant, class, nodes, gpus_per_node, duration, checkpoint_interval
//   optional: id, checkpoint_cost, restart_cost, pool, cpus_per_node, memory_per_node,
//             mig_profile, gpu_model, gpu_share (an MPS share of one GPU: "25" or "25%"),
//             gpu_memory (its GPU memory, "20Gi"; needed with gpu_share), user (whom it
//             runs as: an MPS pool holds one user's shares; default the tenant)
// Every problem is named with the file, line and column. Read by baton-sim; written by
// its generator and converter. Pure functions; thread-safe.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/policy.h"
#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/sim/simulator.h"

namespace baton::sim {

struct TraceJob {
  JobId id = 0;  // 0 in a file: the row number
  Time submit_ms = 0;
  std::string tenant;
  std::string priority_class;
  uint32_t nodes = 1;
  uint32_t gpus_per_node = 1;
  Time duration_ms = 0;             // running time it needs (checkpoints and restarts apart)
  Time checkpoint_interval_ms = 0;  // 0: never checkpoints
  Time checkpoint_cost_ms = 0;
  Time restart_cost_ms = 0;
  std::string pool;
  uint64_t cpu_millis_per_node = 0;    // 0: the policy's default per rank
  uint64_t memory_bytes_per_node = 0;  // 0: the policy's default per rank
  std::string mig_profile;
  std::string gpu_model;
  uint32_t gpu_share_percent = 0;  // an MPS share of one GPU (gpus_per_node 1); 0: none
  uint64_t gpu_memory_bytes = 0;
  std::string user;  // "": the tenant
  int line = 0;      // where it was read, for later errors
};

// Reads CSV or JSONL (by the first character that is not a space: '{' is JSONL).
absl::StatusOr<std::vector<TraceJob>> ParseTrace(const std::string& text,
                                                 const std::string& source);
absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path);
void WriteTraceCsv(const std::vector<TraceJob>& jobs, std::ostream& out);

// Checks the jobs against the cluster and the policy: a known class, ids unique, and a
// gang the cluster's pool could hold at all. InvalidArgument naming file, line, column.
absl::Status CheckTrace(const std::vector<TraceJob>& jobs, const std::string& source,
                        const std::vector<sched::NodeInfo>& nodes, const Policy& policy);

// Per pool ("" for the default pool), tolerations for every taint its nodes carry.
using PoolTolerations = std::map<std::string, std::vector<sched::Toleration>>;
PoolTolerations TolerationsByPool(const std::vector<sched::NodeInfo>& nodes,
                                  const std::string& default_pool);

// The job as the coordinator would see it: ranks one per GPU, the policy's per-rank CPU
// and memory defaults, mpi for multi-node gangs, tolerations for its pool's taints.
sched::PendingJob ToPending(const TraceJob& job, const Policy& policy,
                            const PoolTolerations& tolerations);
SimWork WorkOf(const TraceJob& job);

// Replays the jobs on the nodes under the policy (grace from its defaults) until every
// job finished or was refused, or `drain_ms` of simulated time after the last submit.
std::unique_ptr<Simulator> SimulateTrace(const std::vector<sched::NodeInfo>& nodes,
                                         const Policy& policy, const std::vector<TraceJob>& jobs,
                                         SimOptions options, Time drain_ms);

}  // namespace baton::sim
