// Each GPU in one mode, as the agent's config says (--mps-gpus): whole (the default) or an
// MPS pool whose shares the scheduler hands out (docs/isolation.md, "GPU shares"). A GPU in
// MIG mode is never a pool: MIG is the isolation, MPS sharing is for cooperating services.
// The agent never changes a GPU's compute mode or any other GPU setting. Pure; thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "proto/api.pb.h"

namespace baton {

// Marks the inventory's GPUs that `selector` names as MPS pools (Gpu.mps_pool):
//   ""            none (every GPU whole)
//   "all"         every GPU not in MIG mode
//   "0,2,GPU-…"   those device indices or UUIDs
// InvalidArgument naming --mps-gpus and the entry when an entry is malformed, names a GPU
// the node does not have, or names a GPU in MIG mode (its slices are listed, not it).
absl::Status MarkMpsPools(const std::string& selector, v1::Inventory* inventory);

}  // namespace baton
