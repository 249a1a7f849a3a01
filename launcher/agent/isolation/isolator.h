// The node's isolation, per job attempt: cgroups (CgroupDriver) with per-class CPU and
// memory limits (CpuPlanner), the network class (NetCaps), the GPU/NCCL environment
// (gpu_env.h), and each rank's binding within the attempt's cpuset (rank_plan.h). The
// Agent calls Prepare before spawning an attempt's ranks (they join the returned
// cgroup.procs files and take their binding before exec), Kill/Release at its end, Stats
// for reports, and Recover + Readopt at start-up. Without a driver (mode "none") only the
// environment and the bindings (within the whole node) apply. Thread-safe (one mutex);
// cgroup and tc/nft calls happen under it.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/cgroup_driver.h"
#include "launcher/agent/isolation/cpu_plan.h"
#include "launcher/agent/isolation/net_caps.h"
#include "launcher/agent/isolation/rank_plan.h"
#include "launcher/agent/isolation/self_affinity.h"
#include "proto/agent.pb.h"

namespace baton {

struct AttemptRequest {
  uint64_t job_id = 0;
  uint32_t attempt = 0;
  bool inference = false;
  const v1::JobSpec* spec = nullptr;  // GPU memory, network cap
  uint64_t cpu_millis = 0;            // this node's share
  uint64_t memory_bytes = 0;
  std::vector<std::string> gpu_ids;    // this node's GPUs for the attempt
  uint32_t pids_limit = 0;             // most processes and threads; 0: no limit
  std::vector<v1::RankBinding> ranks;  // the placement's, per local rank (may be empty)
  uint32_t local_ranks = 0;            // ranks on this node
  // Under a network cap, leave NCCL's transport to the job (the policy's
  // network.steer_capped_training_to_sockets is off).
  bool keep_nccl_transport = false;
};

struct PreparedAttempt {
  std::vector<std::string> procs_files;    // for SpawnOptions::cgroup_procs
  std::map<std::string, std::string> env;  // GPU and NCCL settings
  v1::IsolationLimits limits;
  std::vector<RankPlan> ranks;  // where each local rank runs (limits.ranks, as plans)
};

struct LiveLeftover {
  uint64_t job_id = 0;
  uint32_t attempt = 0;
  std::vector<pid_t> pids;
};

class Isolator {
 public:
  // `driver` null: mode none. `net` null: no network caps.
  Isolator(const v1::Inventory& inventory, ClassOptions classes,
           std::unique_ptr<CgroupDriver> driver, std::unique_ptr<NetCaps> net);

  // Creates the attempt's cgroup with its limits, narrows running training attempts
  // when an inference attempt arrives, and adds its network class; on a failure undoes
  // what it did, in reverse order.
  absl::StatusOr<PreparedAttempt> Prepare(const AttemptRequest& request);
  // SIGKILL to every process of the attempt (its cgroup), wherever they are.
  absl::Status Kill(uint64_t job, uint32_t attempt);
  // Kills what is left, removes the cgroup and the network class, widens training again
  // when an inference attempt leaves. Idempotent.
  absl::Status Release(uint64_t job, uint32_t attempt);
  // Usage, throttling, memory peak and network bytes; NotFound for unknown attempts.
  absl::StatusOr<v1::IsolationStats> Stats(uint64_t job, uint32_t attempt);
  v1::IsolationLimits Limits(uint64_t job, uint32_t attempt) const;
  absl::StatusOr<std::vector<pid_t>> Pids(uint64_t job, uint32_t attempt);

  // After an agent restart: removes the cgroups with no process left and every network
  // rule or class of no live attempt; returns the attempts still running.
  absl::StatusOr<std::vector<LiveLeftover>> Recover();
  // Takes a running attempt found by Recover back under management (limits re-applied).
  absl::Status Readopt(const AttemptRequest& request);

  // From now on the agent's own threads (and what they fork) keep off the CPUs inference
  // holds exclusively, and inside `self`'s system CPUs: applied now and whenever an
  // inference attempt is set up, re-adopted or released.
  absl::Status ManageSelfAffinity(std::shared_ptr<SelfAffinity> self);

  v1::NodeIsolation Describe() const;
  bool enabled() const { return driver_ != nullptr; }
  // Where each attempt's keepers go before writing an exit record (SpawnOptions::
  // exit_cgroup_procs); empty without cgroups or where the layout has no such place.
  std::string ExitProcsFile() const { return driver_ ? driver_->ExitProcsFile() : ""; }
  static std::string Name(uint64_t job, uint32_t attempt);
  // The device nodes of every GPU of the node but `own` (by minor; slices count as their
  // GPU): what an attempt holding `own` may not open.
  std::vector<CharDevice> OtherGpusThan(const std::vector<v1::Gpu>& own) const;

 private:
  struct Attempt {
    v1::IsolationLimits limits;
    bool inference = false;
    bool net = false;     // its traffic has a class
    bool capped = false;  // ... under a ceiling (training, or an inference spec's cap)
    std::vector<v1::RankBinding> bindings;  // the placement's, planned with each cpuset
    uint32_t local_ranks = 0;
    std::vector<RankPlan> ranks;
  };
  absl::Status ApplyPlanLocked(const std::string& name);
  absl::Status ApplyTrainingLocked(const std::string& except);
  // The agent's own threads and the exit cgroup: the CPUs no inference attempt holds.
  absl::Status ApplySelfLocked();
  absl::StatusOr<PreparedAttempt> SetUpLocked(const AttemptRequest& r, bool adopt);
  void UndoLocked(const std::string& name, bool inference, int stage);
  std::vector<v1::Gpu> GpusOf(const std::vector<std::string>& ids) const;

  const v1::Inventory inventory_;
  const ClassOptions classes_;
  std::unique_ptr<CgroupDriver> driver_;
  std::unique_ptr<NetCaps> net_;
  mutable std::mutex mu_;
  CpuPlanner planner_;
  std::map<std::string, Attempt> attempts_;
  std::shared_ptr<SelfAffinity> self_;
};

}  // namespace baton
