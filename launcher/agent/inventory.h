// What a node has: logical CPUs, physical cores (SMT siblings) and NUMA nodes from hwloc
// (topology.h), memory from /proc/meminfo, GPUs and MIG slices through NVML (nvml.h), or
// from the agent's configuration on machines without NVIDIA; both go through the same
// code after discovery, and a GPU NVML places on no NUMA node gets its PCI locality from
// hwloc. Read once at start-up by the agent. Tests give a synthetic or XML topology, a
// fake /proc and a fake NVML library; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/topology.h"
#include "proto/api.pb.h"

namespace baton {

struct InventoryOptions {
  TopologySource topology;  // this machine; tests give a synthetic or XML one
  std::string proc_root = "/proc";
  uint32_t fake_gpus = 0;  // GPUs to invent on a machine without NVIDIA
  std::string fake_gpu_model = "FakeGPU";
  uint64_t fake_gpu_memory_bytes = 80ull << 30;
  // Each fake GPU in MIG mode, cut into this many slices of this profile (0: whole GPUs),
  // as NVML lists them: "MIG-…" slices with their GPU's UUID as parent and an equal part
  // of its memory. For the dashboard's grid and the scheduler's MIG paths on a machine
  // without NVIDIA.
  std::string fake_mig_profile;
  uint32_t fake_mig_slices = 0;
  // GPUs offered as MPS pools (MarkMpsPools, gpu_modes.h): "", "all", or indices/UUIDs.
  std::string mps_gpus;
  std::string node_name;  // part of the fake GPUs' UUIDs
  std::string nic;        // cluster interface
  uint64_t nic_mbps = 0;  // its rate, from config (a veth has none)
  // NVML to load ("" skips discovery); when it cannot be loaded, fake_gpus apply.
  std::string nvml_library = "libnvidia-ml.so.1";
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11} (the kernel's cpuset lists). InvalidArgument on
// malformed lists.
absl::StatusOr<std::vector<uint32_t>> ParseCpuList(const std::string& text);

absl::StatusOr<v1::Inventory> ReadInventory(const InventoryOptions& options);

// --fake-mig "PROFILE:SLICES" ("3g.40gb:2") into `options`; InvalidArgument naming what is
// wrong (a profile as NVML names them, 1 to 7 slices).
absl::Status ParseFakeMig(const std::string& text, InventoryOptions* options);

}  // namespace baton
