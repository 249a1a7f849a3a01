// gpu_inventory: what baton's NVML discovery (launcher/agent/nvml.h, the agent's GPU
// inventory) finds on this machine, one line per schedulable GPU, tab-separated:
//   index  uuid  model  memory_bytes  mig_profile  parent_uuid  pci_bus_id  util_percent
//   memory_used_bytes
// A GPU in MIG mode shows as its slices (mig_profile and parent_uuid set), not itself.
// The last two columns are the agent's utilisation sample (NvmlSampler; util_percent ""
// where NVML gives none, as for MIG slices; both "" when sampling failed).
// scripts/gpu-check.sh compares it with nvidia-smi. Read-only: NVML is only queried.
//   gpu_inventory [--library PATH]   (default libnvidia-ml.so.1)
// Exit 0 with the lines (none on a machine whose driver lists no GPU), 1 with the error.
#include <cstdio>
#include <cstring>
#include <string>

#include "launcher/agent/nvml.h"

int main(int argc, char** argv) {
  baton::NvmlOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
      options.library = argv[++i];
    } else {
      std::fprintf(stderr, "usage: gpu_inventory [--library PATH]\n");
      return 2;
    }
  }
  auto gpus = baton::DiscoverNvmlGpus(options);
  if (!gpus.ok()) {
    std::fprintf(stderr, "gpu_inventory: %s\n", gpus.status().ToString().c_str());
    return 1;
  }
  auto sampler = baton::NvmlSampler::Open(options);
  for (const baton::GpuInfo& g : *gpus) {
    std::string util, used;
    if (sampler.ok()) {
      auto sample = (*sampler)->Sample(g.uuid);
      if (sample.ok()) {
        if (sample->has_percent) util = std::to_string(sample->percent);
        used = std::to_string(sample->memory_used_bytes);
      }
    }
    std::printf("%u\t%s\t%s\t%llu\t%s\t%s\t%s\t%s\t%s\n", g.index, g.uuid.c_str(), g.model.c_str(),
                static_cast<unsigned long long>(g.memory_bytes), g.mig_profile.c_str(),
                g.parent_uuid.c_str(), g.pci_bus_id.c_str(), util.c_str(), used.c_str());
  }
  return 0;
}
