// The commands the coordinator sends agents, built from the stored job and the policy
// alone: no lock, no clock, no store. JobManager decides when to send them; these say what.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/policy.h"
#include "proto/agent.pb.h"

namespace baton {

// What the policy adds to a job's Launch on every node.
struct LaunchTerms {
  v1::WorkloadKind kind = v1::WORKLOAD_KIND_TRAINING;  // inference for service classes
  bool allow_root = false;                             // the tenant may run jobs as root
  uint32_t pids_limit = 0;                             // 0: none
  bool keep_nccl_transport_under_cap = true;
  uint64_t stop_after_disconnect_ms = 0;  // 0: never stopped for lack of the coordinator
};
LaunchTerms LaunchTermsOf(const Policy& policy, const v1::JobSpec& spec);

// Whom attempt `a` of `job` runs as: its run_as (an MPS service user), else the job's owner.
const std::string& RunAsOf(const v1::Job& job, const v1::Attempt& a);

// The Launch of the job's last attempt for its node `node_rank` (its processes run as
// RunAsOf); `agent_addresses` holds each placed node's agent address, in placement order
// ("" where unknown).
v1::CoordinatorCommand LaunchCommand(const v1::Job& job, uint32_t node_rank,
                                     const std::string& exec_secret, const LaunchTerms& terms,
                                     const std::vector<std::string>& agent_addresses);
// Eviction of `attempt`: checkpoint and exit by `deadline`.
v1::CoordinatorCommand PreemptCommand(uint64_t job_id, uint32_t attempt, absl::Time deadline,
                                      const std::string& reason);
// `signal` now, SIGKILL after `grace_seconds`.
v1::CoordinatorCommand KillCommand(uint64_t job_id, uint32_t attempt, int signal,
                                   uint32_t grace_seconds, const std::string& reason);
// The attempt's end is stored: the agent may forget it.
v1::CoordinatorCommand AckCommand(uint64_t job_id, uint32_t attempt);

}  // namespace baton
