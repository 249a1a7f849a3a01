// Environment that keeps jobs within their GPU and network share (docs/isolation.md, "GPUs"
// and "Network caps"): inference frameworks grow GPU memory on demand instead of grabbing
// it all; jobs that ask for less GPU memory than a whole GPU, without MIG, get CUDA MPS
// limits (memory = request + headroom, below the physical size; threads in proportion);
// network-capped jobs keep NCCL on sockets on the cluster NIC, where tc sees them.
// Pure; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/api.pb.h"

namespace baton {

struct GpuEnvInput {
  bool inference = false;
  const v1::JobSpec* spec = nullptr;
  std::vector<v1::Gpu> gpus;  // the attempt's GPUs on this node, in CUDA_VISIBLE_DEVICES order
  std::string capped_nic;     // "" when the attempt's network is not capped
  uint32_t headroom_percent = 20;
};

struct GpuEnv {
  std::map<std::string, std::string> env;  // overrides the spec's env
  std::string sharing;                     // "", "mig", "mps"
};

GpuEnv BuildGpuEnv(const GpuEnvInput& in);

}  // namespace baton
