#include "launcher/agent/topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <set>

namespace baton {
namespace {

std::vector<uint32_t> CpuList(hwloc_const_bitmap_t set) {
  std::vector<uint32_t> out;
  if (set == nullptr) return out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) {
    out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

bool ParseHex(std::string_view s, uint32_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// Lowest-numbered NUMA node among the memory children of `obj` (through memory-side
// caches); -1 when it has none.
int32_t LowestNode(hwloc_obj_t first_memory_child) {
  int32_t best = -1;
  for (hwloc_obj_t m = first_memory_child; m != nullptr; m = m->next_sibling) {
    int32_t id = m->type == HWLOC_OBJ_NUMANODE ? static_cast<int32_t>(m->os_index)
                                               : LowestNode(m->memory_first_child);
    if (id >= 0 && (best < 0 || id < best)) best = id;
  }
  return best;
}

// A CPU's own NUMA node, as the kernel's node cpulists have it: the memory attached to its
// closest ancestor that has any. hwloc gives a memory-only node (HBM, CXL, GPU memory) the
// CPUs of whatever it hangs off; the kernel numbers such nodes after those with CPUs, so
// the lowest-numbered node there is the CPUs' own.
int32_t LocalNode(hwloc_obj_t pu) {
  for (hwloc_obj_t a = pu; a != nullptr; a = a->parent) {
    if (a->memory_arity > 0) return LowestNode(a->memory_first_child);
  }
  return -1;
}

// hwloc's own configuration of what to discover and where from.
absl::Status Configure(hwloc_topology_t t, const TopologySource& source) {
  // Every online CPU, also those outside the agent's own cpuset: jobs get them.
  hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  // PCI devices and the bridges above them, for GPU locality; no OS devices. They come
  // from sysfs (the linuxio component): the libpciaccess plugin ("pci") finds the same
  // devices here but leaks its state at every load (LeakSanitizer in the sanitize build).
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci") < 0) {
    return absl::InternalError("hwloc: cannot leave out its pci component");
  }
  if (!source.synthetic.empty() && !source.xml_file.empty()) {
    return absl::InvalidArgumentError("topology: a synthetic description or an XML file, not both");
  }
  if (!source.synthetic.empty() && hwloc_topology_set_synthetic(t, source.synthetic.c_str()) < 0) {
    return absl::InvalidArgumentError("malformed hwloc synthetic topology '" + source.synthetic +
                                      "'");
  }
  if (!source.xml_file.empty() && hwloc_topology_set_xml(t, source.xml_file.c_str()) < 0) {
    return absl::InvalidArgumentError("cannot use hwloc XML topology " + source.xml_file + ": " +
                                      std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace

struct Topology::Hwloc {
  hwloc_topology_t topology = nullptr;
  ~Hwloc() {
    if (topology != nullptr) hwloc_topology_destroy(topology);
  }
};

bool ParsePciBusId(const std::string& bus_id, PciAddress* out) {
  // domain:bus:dev.func, all hex; NVML pads the domain to 8 digits, sysfs to 4.
  size_t c1 = bus_id.find(':'), c2 = bus_id.find(':', c1 + 1), dot = bus_id.find('.');
  if (c1 == std::string::npos || c2 == std::string::npos || dot == std::string::npos || dot < c2) {
    return false;
  }
  std::string_view s(bus_id);
  PciAddress a;
  if (!ParseHex(s.substr(0, c1), &a.domain) || !ParseHex(s.substr(c1 + 1, c2 - c1 - 1), &a.bus) ||
      !ParseHex(s.substr(c2 + 1, dot - c2 - 1), &a.dev) || !ParseHex(s.substr(dot + 1), &a.func) ||
      a.bus > 0xff || a.dev > 0x1f || a.func > 0x7) {
    return false;
  }
  *out = a;
  return true;
}

Topology::Topology(std::unique_ptr<Hwloc> hwloc) : hwloc_(std::move(hwloc)) {}
Topology::~Topology() = default;

absl::StatusOr<std::unique_ptr<Topology>> Topology::Load(const TopologySource& source) {
  auto hwloc = std::make_unique<Hwloc>();
  if (hwloc_topology_init(&hwloc->topology) < 0) {
    hwloc->topology = nullptr;
    return absl::InternalError(std::string("hwloc_topology_init: ") + std::strerror(errno));
  }
  if (auto s = Configure(hwloc->topology, source); !s.ok()) return s;
  if (hwloc_topology_load(hwloc->topology) < 0) {
    std::string what = !source.xml_file.empty()    ? "XML topology " + source.xml_file
                       : !source.synthetic.empty() ? "synthetic topology '" + source.synthetic + "'"
                                                   : std::string("this machine's topology");
    std::string msg = "hwloc cannot load " + what + ": " + std::strerror(errno);
    return source.xml_file.empty() && source.synthetic.empty() ? absl::InternalError(msg)
                                                               : absl::InvalidArgumentError(msg);
  }
  std::unique_ptr<Topology> topo(new Topology(std::move(hwloc)));
  if (auto s = topo->Collect(); !s.ok()) return s;
  return topo;
}

absl::Status Topology::Collect() {
  hwloc_topology_t t = hwloc_->topology;
  std::map<int32_t, std::vector<uint32_t>> cpus_of;
  for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu));) {
    int32_t node = LocalNode(pu);
    cpus_.push_back(pu->os_index);
    node_of_[pu->os_index] = node;
    cpus_of[node].push_back(pu->os_index);
  }
  std::sort(cpus_.begin(), cpus_.end());
  if (cpus_.empty()) return absl::FailedPreconditionError("hwloc found no CPU");
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));) {
    NumaNodeTopology node;
    node.id = static_cast<int32_t>(n->os_index);
    node.cpus = cpus_of[node.id];
    std::sort(node.cpus.begin(), node.cpus.end());
    node.memory_bytes = n->attr ? n->attr->numanode.local_memory : 0;
    numa_.push_back(std::move(node));
  }
  std::sort(numa_.begin(), numa_.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  // Cores as hwloc sees them; a CPU under no core (some hypervisors hide the topology) is a
  // core of its own.
  std::set<uint32_t> in_core;
  for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_CORE, c));) {
    CoreTopology core;
    core.cpus = CpuList(c->cpuset);
    if (core.cpus.empty()) continue;
    in_core.insert(core.cpus.begin(), core.cpus.end());
    cores_.push_back(std::move(core));
  }
  for (uint32_t cpu : cpus_) {
    if (in_core.count(cpu)) continue;
    cores_.emplace_back();
    cores_.back().cpus = {cpu};
  }
  for (auto& core : cores_) {
    auto it = node_of_.find(core.cpus.front());
    core.numa_node = it == node_of_.end() ? -1 : it->second;
  }
  std::sort(cores_.begin(), cores_.end(),
            [](const auto& a, const auto& b) { return a.cpus.front() < b.cpus.front(); });
  return absl::OkStatus();
}

int32_t Topology::NumaNodeOfPci(const std::string& bus_id) const {
  PciAddress a;
  if (!ParsePciBusId(bus_id, &a)) return -1;
  hwloc_obj_t dev = hwloc_get_pcidev_by_busid(hwloc_->topology, a.domain, a.bus, a.dev, a.func);
  if (dev == nullptr) return -1;
  // Local to a node when every CPU nearest the device is that node's (a device hanging off
  // the whole machine of a two-node host is local to neither).
  hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(hwloc_->topology, dev);
  std::set<int32_t> nodes;
  for (uint32_t cpu : CpuList(near ? near->cpuset : nullptr)) {
    auto it = node_of_.find(cpu);
    nodes.insert(it == node_of_.end() ? -1 : it->second);
  }
  return nodes.size() == 1 ? *nodes.begin() : -1;
}

}  // namespace baton
