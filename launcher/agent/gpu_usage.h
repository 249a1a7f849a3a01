// How busy the node's GPUs are, for the dashboard's GPU grid and `baton nodes --json`:
// sampled by the agent every --stats-interval and sent with its heartbeats. A driver with
// two implementations, chosen as the inventory chose its GPUs:
// - NVML (real GPUs): the library stays loaded and initialised between samples; whole
//   GPUs report nvmlDeviceGetUtilizationRates and memory in use, MIG slices memory only
//   (NVML does not give a slice's utilisation this way: unknown, not zero);
// - a file (fake GPUs, --fake-gpu-utilization FILE): lines "UUID PERCENT" or "* PERCENT",
//   read at each sample, so that tests and demos set the value while the agent runs.
// A GPU with no reading is reported without a percent. Thread-compatible (the agent
// samples on one thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton {

class GpuUsageSource {
 public:
  virtual ~GpuUsageSource() = default;
  // One reading per GPU of the inventory, in its order.
  virtual std::vector<v1::GpuUtilization> Sample() = 0;
};

// NotFound when the library cannot be loaded; Unavailable when NVML does not initialise.
absl::StatusOr<std::unique_ptr<GpuUsageSource>> NvmlUsage(const std::string& library,
                                                          const v1::Inventory& inventory);

// The fake GPUs' values from `path` (a missing or unreadable file: unknown for each).
std::unique_ptr<GpuUsageSource> FileUsage(const std::string& path, const v1::Inventory& inventory);

// The source for this inventory: NVML when its GPUs came from NVML, the file when they
// are fake and `fake_file` is set; null when there is nothing to sample.
std::unique_ptr<GpuUsageSource> GpuUsageFor(const v1::Inventory& inventory,
                                            const std::string& nvml_library,
                                            const std::string& fake_file);

}  // namespace baton
