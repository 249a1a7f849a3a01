// GPU discovery through NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (no
// NVML header or link-time dependency: the few entry points are declared in nvml.cc).
// Called once by the inventory at agent start-up. Depends only on absl, so GPU-only
// builds carry it. Thread-safe: each call loads, initialises and shuts NVML down.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

// One schedulable GPU: a whole GPU, or a MIG slice of a GPU in MIG mode (whose parent is
// then not listed itself: its memory and compute belong to the slices).
struct GpuInfo {
  uint32_t index = 0;  // NVML device index (a slice's parent index)
  std::string uuid;    // "GPU-…" or "MIG-…"
  std::string model;   // "NVIDIA H200"
  uint64_t memory_bytes = 0;
  int32_t numa_node = -1;   // -1 when NVML does not say
  std::string mig_profile;  // "1g.18gb" for slices
  std::string parent_uuid;  // for slices
  std::string pci_bus_id;   // "00000000:3B:00.0"
  bool fake = false;        // from the agent's configuration
  int32_t minor = -1;       // /dev/nvidia<minor> (a slice: its GPU's); -1 unknown
};

struct NvmlOptions {
  std::string library = "libnvidia-ml.so.1";  // a path in tests (the fake library)
};

// NotFound when the library cannot be loaded (a node without the NVIDIA driver);
// Unavailable/Internal naming the NVML call when it is there but fails.
absl::StatusOr<std::vector<GpuInfo>> DiscoverNvmlGpus(const NvmlOptions& options);

// A GPU's (or MIG slice's) use at one moment.
struct GpuSample {
  bool has_percent = false;  // NVML gave a utilisation (whole GPUs; not MIG slices)
  uint32_t percent = 0;      // kernels running, % of the driver's last sample period
  uint64_t memory_used_bytes = 0;
};

// NVML kept loaded and initialised between samples (the agent samples every
// --stats-interval). Thread-compatible.
class NvmlSampler {
 public:
  // NotFound when the library cannot be loaded; Unavailable when NVML does not start.
  static absl::StatusOr<std::unique_ptr<NvmlSampler>> Open(const NvmlOptions& options);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;
  // The device with this UUID ("GPU-…" or "MIG-…"); NotFound/Unavailable naming the call.
  absl::StatusOr<GpuSample> Sample(const std::string& uuid);

 private:
  struct Impl;
  explicit NvmlSampler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "NVIDIA H200 MIG 1g.18gb" -> "1g.18gb"; "" when the name has no MIG part.
std::string MigProfileFromName(const std::string& name);

}  // namespace baton
