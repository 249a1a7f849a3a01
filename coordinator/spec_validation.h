// Admission checks for a submitted JobSpec: fills the defaults a spec inherits from the
// policy and the caller, and refuses — naming the field — anything malformed, forbidden
// or larger than any node of the cluster. Called by the Coordinator service before
// anything is stored. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/access.h"
#include "coordinator/policy.h"
#include "proto/api.pb.h"

namespace baton {

// The largest shapes the known nodes (connected or not) offer; zero nodes means the
// cluster is still forming and only the spec's own consistency is checked.
struct ClusterShape {
  uint32_t nodes = 0;
  uint32_t max_gpus_per_node = 0;
  uint64_t max_cpu_millis_per_node = 0;
  uint64_t max_memory_bytes_per_node = 0;
  uint64_t max_gpu_memory_bytes = 0;  // the largest whole GPU's memory (MIG slices apart)
  // Per node pool (as nodes name it; "" is the default): the largest MPS pool's memory.
  std::map<std::string, uint64_t> max_mps_memory_by_pool;
  // How many nodes have at least g GPUs, for g = 0..max_gpus_per_node.
  std::vector<uint32_t> nodes_with_at_least_gpus;
};

// InvalidArgument ("spec.<field>: …") for bad input; PermissionDenied (access.h) for a
// tenant the caller is not a member of, or a class its tenant may not use. On success
// `spec` holds every default filled in, the tenant among them.
absl::Status ValidateAndDefaultSpec(const Caller& caller, const Policy& policy,
                                    const ClusterShape& shape, v1::JobSpec* spec);

}  // namespace baton
