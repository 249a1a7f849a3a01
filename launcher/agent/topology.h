// The node's CPU and memory topology through hwloc: online logical CPUs, physical cores
// (SMT siblings), NUMA nodes with their CPUs and memory, and the NUMA node a PCI device
// sits nearest. Loaded once by the inventory at agent start-up, from this machine or, in
// tests, from an hwloc synthetic description or an XML export. Immutable after Load;
// thread-safe to read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

// Where the topology comes from; both empty: this machine.
struct TopologySource {
  std::string synthetic;  // hwloc synthetic description, e.g. "numa:2 core:4 pu:2"
  std::string xml_file;   // an hwloc XML export (`lstopo topo.xml`), PCI devices included
};

struct NumaNodeTopology {
  int32_t id = 0;              // the kernel's node number
  std::vector<uint32_t> cpus;  // those it is the own node of, ascending; none: memory only
  uint64_t memory_bytes = 0;   // 0 when hwloc does not know it
};

struct CoreTopology {
  std::vector<uint32_t> cpus;  // its hardware threads, ascending
  int32_t numa_node = -1;      // its first CPU's node; -1 when it has none
};

class Topology {
 public:
  // InvalidArgument for a malformed synthetic description or XML (naming it); Internal
  // when hwloc cannot read this machine; FailedPrecondition when no CPU is found.
  static absl::StatusOr<std::unique_ptr<Topology>> Load(const TopologySource& source);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  const std::vector<uint32_t>& cpus() const { return cpus_; }                // ascending
  const std::vector<NumaNodeTopology>& numa_nodes() const { return numa_; }  // by id
  const std::vector<CoreTopology>& cores() const { return cores_; }          // by first CPU
  // The NUMA node nearest the PCI device "0000:3b:00.0" (NVML's "00000000:3B:00.0" too);
  // -1 when the device is unknown, is not local to one node, or the id is malformed.
  int32_t NumaNodeOfPci(const std::string& bus_id) const;

 private:
  struct Hwloc;  // the loaded hwloc topology, kept for PCI look-ups
  explicit Topology(std::unique_ptr<Hwloc> hwloc);
  absl::Status Collect();

  std::unique_ptr<Hwloc> hwloc_;
  std::vector<uint32_t> cpus_;
  std::vector<NumaNodeTopology> numa_;
  std::vector<CoreTopology> cores_;
  std::map<uint32_t, int32_t> node_of_;  // CPU -> its own NUMA node (-1: none)
};

// "0000:3b:00.0" or "00000000:3B:00.0" -> its four fields; false when malformed.
struct PciAddress {
  uint32_t domain = 0, bus = 0, dev = 0, func = 0;
};
bool ParsePciBusId(const std::string& bus_id, PciAddress* out);

}  // namespace baton
