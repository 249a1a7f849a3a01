#include "launcher/agent/inventory.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "launcher/agent/gpu_modes.h"
#include "launcher/agent/nvml.h"
#include "launcher/agent/topology.h"

namespace baton {
namespace {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ParseUint(std::string_view s, uint32_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

// "MemTotal:       24523844 kB" line of a meminfo file, in bytes.
absl::StatusOr<uint64_t> MemTotal(const std::string& path) {
  auto text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    size_t pos = line.find("MemTotal:");
    if (pos == std::string::npos) continue;
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str() + pos, "MemTotal: %llu kB", &kb) == 1) return kb * 1024;
  }
  return absl::DataLossError("no MemTotal in " + path);
}

std::vector<GpuInfo> FakeGpus(const InventoryOptions& o, const std::vector<v1::NumaNode>& numa) {
  // Boards put GPUs next to CPUs: memory-only nodes get none.
  std::vector<int32_t> near;
  for (const auto& n : numa) {
    if (n.cpus_size() > 0) near.push_back(n.id());
  }
  std::vector<GpuInfo> gpus;
  for (uint32_t i = 0; i < o.fake_gpus; ++i) {
    GpuInfo g;
    g.index = i;
    char uuid[96];
    std::snprintf(uuid, sizeof uuid, "GPU-fake-%s-%u", o.node_name.c_str(), i);
    g.uuid = uuid;
    g.model = o.fake_gpu_model;
    g.memory_bytes = o.fake_gpu_memory_bytes;
    // Spread fake GPUs over NUMA nodes as real boards do: first half on node 0, …
    g.numa_node = near.empty() ? -1 : near[i * near.size() / o.fake_gpus];
    g.fake = true;
    g.minor = static_cast<int32_t>(i);  // as /dev/nvidia<i> would be
    if (o.fake_mig_slices == 0) {
      gpus.push_back(std::move(g));
      continue;
    }
    for (uint32_t k = 0; k < o.fake_mig_slices; ++k) {  // NVML lists the slices, not the GPU
      GpuInfo slice = g;
      std::snprintf(uuid, sizeof uuid, "MIG-fake-%s-%u-%u", o.node_name.c_str(), i, k);
      slice.uuid = uuid;
      slice.parent_uuid = g.uuid;
      slice.mig_profile = o.fake_mig_profile;
      slice.memory_bytes = g.memory_bytes / o.fake_mig_slices;
      gpus.push_back(std::move(slice));
    }
  }
  return gpus;
}

// NVML's GPUs when the library loads and serves any, else the configured fake ones.
absl::StatusOr<std::vector<GpuInfo>> DiscoverGpus(const InventoryOptions& o,
                                                  const std::vector<v1::NumaNode>& numa) {
  if (!o.nvml_library.empty()) {
    NvmlOptions nvml;
    nvml.library = o.nvml_library;
    auto found = DiscoverNvmlGpus(nvml);
    if (found.ok() && !found->empty()) return found;
    // A node without the driver is normal; a driver that fails is not.
    if (!found.ok() && found.status().code() != absl::StatusCode::kNotFound) {
      return found.status();
    }
  }
  return FakeGpus(o, numa);
}

void AddGpus(const std::vector<GpuInfo>& gpus, const Topology& topo,
             const std::vector<v1::NumaNode>& numa, v1::Inventory* inv) {
  for (const GpuInfo& info : gpus) {
    v1::Gpu* g = inv->add_gpus();
    g->set_index(info.index);
    g->set_uuid(info.uuid);
    g->set_model(info.model);
    g->set_memory_bytes(info.memory_bytes);
    // NVML without the node: the PCI device's locality; one NUMA node: every device is on
    // it, whatever the firmware says.
    int32_t node = info.numa_node;
    if (node < 0 && !info.pci_bus_id.empty()) node = topo.NumaNodeOfPci(info.pci_bus_id);
    g->set_numa_node(node < 0 && numa.size() == 1 ? numa[0].id() : node);
    g->set_mig_profile(info.mig_profile);
    g->set_parent_uuid(info.parent_uuid);
    g->set_pci_bus_id(info.pci_bus_id);
    g->set_fake(info.fake);
    if (info.minor >= 0) g->set_minor(info.minor);
  }
}

std::vector<v1::NumaNode> NumaNodes(const Topology& topo, uint64_t mem) {
  std::vector<v1::NumaNode> numa;
  for (const NumaNodeTopology& t : topo.numa_nodes()) {
    v1::NumaNode n;
    n.set_id(t.id);
    for (uint32_t c : t.cpus) n.add_cpus(c);
    n.set_memory_bytes(t.memory_bytes);
    numa.push_back(std::move(n));
  }
  // A kernel without NUMA still has hwloc's one node; when hwloc cannot size it, it holds
  // all the memory.
  if (numa.size() == 1 && numa[0].memory_bytes() == 0) numa[0].set_memory_bytes(mem);
  return numa;
}

void AddCores(const Topology& topo, v1::Inventory* inv) {
  for (const CoreTopology& t : topo.cores()) {
    v1::CpuCore* core = inv->add_cores();
    core->set_id(static_cast<uint32_t>(inv->cores_size() - 1));
    for (uint32_t c : t.cpus) core->add_cpus(c);
    core->set_numa_node(t.numa_node);
  }
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseCpuList(const std::string& text) {
  std::vector<uint32_t> cpus;
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return cpus;
  std::stringstream ss(t);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    uint32_t lo = 0, hi = 0;
    bool ok = dash == std::string::npos
                  ? ParseUint(part, &lo) && (hi = lo, true)
                  : ParseUint(std::string_view(part).substr(0, dash), &lo) &&
                        ParseUint(std::string_view(part).substr(dash + 1), &hi);
    if (!ok || hi < lo || hi - lo > 65536) {
      return absl::InvalidArgumentError("malformed CPU list '" + text + "'");
    }
    for (uint32_t c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

absl::StatusOr<v1::Inventory> ReadInventory(const InventoryOptions& o) {
  v1::Inventory inv;
  auto topo = Topology::Load(o.topology);
  if (!topo.ok()) return topo.status();
  inv.set_cpus(static_cast<uint32_t>((*topo)->cpus().size()));
  auto mem = MemTotal(o.proc_root + "/meminfo");
  if (!mem.ok()) return mem.status();
  inv.set_memory_bytes(*mem);
  auto numa = NumaNodes(**topo, *mem);
  AddCores(**topo, &inv);
  auto gpus = DiscoverGpus(o, numa);
  if (!gpus.ok()) return gpus.status();
  AddGpus(*gpus, **topo, numa, &inv);
  if (absl::Status s = MarkMpsPools(o.mps_gpus, &inv); !s.ok()) return s;
  for (auto& n : numa) *inv.add_numa_nodes() = std::move(n);
  inv.set_nic(o.nic);
  inv.set_nic_mbps(o.nic_mbps);
  return inv;
}

absl::Status ParseFakeMig(const std::string& text, InventoryOptions* options) {
  const size_t colon = text.rfind(':');
  uint32_t slices = 0;
  const std::string profile = text.substr(0, colon);
  // NVML's profile names: "<compute slices>g.<memory>gb", e.g. 1g.18gb, 3g.40gb.
  unsigned compute = 0, gb = 0;
  char tail[4] = {};
  const bool named = std::sscanf(profile.c_str(), "%ug.%u%3s", &compute, &gb, tail) == 3 &&
                     std::string(tail) == "gb" && compute >= 1 && compute <= 7 && gb > 0 &&
                     profile == std::to_string(compute) + "g." + std::to_string(gb) + "gb";
  if (colon == std::string::npos || !named || !absl::SimpleAtoi(text.substr(colon + 1), &slices) ||
      slices < 1 || slices > 7) {
    return absl::InvalidArgumentError(
        "--fake-mig: \"" + text +
        "\" is not PROFILE:SLICES (a MIG profile such as 3g.40gb and 1 to 7 slices per GPU)");
  }
  options->fake_mig_profile = profile;
  options->fake_mig_slices = slices;
  return absl::OkStatus();
}

}  // namespace baton
