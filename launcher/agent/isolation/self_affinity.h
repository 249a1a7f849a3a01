// The CPUs the node's own baton work runs on (docs/isolation.md, "The node's own work"):
// the agent's threads and what it forks that is not a job's rank (tc, nft, log pumps,
// `baton-agent exec` relays) inherit them. `system` (--system-cpus, as kubelet's reserved
// CPUs or Slurm's CpuSpecList; empty: every CPU of the node) less the CPUs inference
// attempts hold exclusively, set again whenever inference comes or goes. A job's rank
// takes its own binding instead (rank_bind.h), within its cgroup's cpuset.
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace baton {

class SelfAffinity {
 public:
  // `node_cpus`: the node's CPUs (inventory); `system_cpus` a subset of them, or empty.
  SelfAffinity(std::vector<uint32_t> node_cpus, std::vector<uint32_t> system_cpus);

  // InvalidArgument naming the CPUs of `system_cpus` the node does not have.
  static absl::Status Check(const std::vector<uint32_t>& node_cpus,
                            const std::vector<uint32_t>& system_cpus);

  // What Apply sets for `exclusive`: the system CPUs less `exclusive`; where inference
  // holds all of them, every other CPU of the node (never an inference core).
  std::vector<uint32_t> Allowed(const std::vector<uint32_t>& exclusive) const;
  // Sets Allowed(exclusive) on every thread of this process (threads started later
  // inherit it from their creator). Internal naming the thread it could not move.
  absl::Status Apply(const std::vector<uint32_t>& exclusive);
  std::vector<uint32_t> current() const;

 private:
  const std::vector<uint32_t> node_;
  const std::vector<uint32_t> system_;
  mutable std::mutex mu_;
  std::vector<uint32_t> current_;
};

}  // namespace baton
