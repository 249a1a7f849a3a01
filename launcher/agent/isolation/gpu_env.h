// Environment that keeps jobs within their GPU and network share (docs/isolation.md, "GPUs"
// and "Network caps"): inference frameworks grow GPU memory on demand instead of grabbing
// it all; MIG slices and MPS shares are reported as such; no CUDA MPS variables are set
// here (gpu_memory on a whole GPU reserves nothing; a share's come from its pool's daemon,
// launcher/agent/mps); network-capped jobs keep NCCL on sockets on the cluster NIC, where
// tc sees them. Pure; thread-safe.
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
};

struct GpuEnv {
  std::map<std::string, std::string> env;  // overrides the spec's env
  std::string sharing;                     // "", "mig" or "mps" (a share of an MPS pool)
};

GpuEnv BuildGpuEnv(const GpuEnvInput& in);

}  // namespace baton
