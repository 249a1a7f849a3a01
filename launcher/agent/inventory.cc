#include "launcher/agent/inventory.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "launcher/agent/nvml.h"

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
    g.numa_node = numa.empty() ? -1 : numa[i * numa.size() / o.fake_gpus].id();
    g.fake = true;
    g.minor = static_cast<int32_t>(i);  // as /dev/nvidia<i> would be
    gpus.push_back(std::move(g));
  }
  return gpus;
}

// NVML's GPUs when the library loads and serves any, else the configured fake ones.
absl::StatusOr<std::vector<GpuInfo>> DiscoverGpus(const InventoryOptions& o,
                                                  const std::vector<v1::NumaNode>& numa) {
  if (!o.nvml_library.empty()) {
    NvmlOptions nvml;
    nvml.library = o.nvml_library;
    nvml.sysfs_root = o.sysfs_root;
    auto found = DiscoverNvmlGpus(nvml);
    if (found.ok() && !found->empty()) return found;
    // A node without the driver is normal; a driver that fails is not.
    if (!found.ok() && found.status().code() != absl::StatusCode::kNotFound) {
      return found.status();
    }
  }
  return FakeGpus(o, numa);
}

void AddGpus(const std::vector<GpuInfo>& gpus, const std::vector<v1::NumaNode>& numa,
             v1::Inventory* inv) {
  for (const GpuInfo& info : gpus) {
    v1::Gpu* g = inv->add_gpus();
    g->set_index(info.index);
    g->set_uuid(info.uuid);
    g->set_model(info.model);
    g->set_memory_bytes(info.memory_bytes);
    // One NUMA node: every device is on it, whatever the firmware says.
    g->set_numa_node(info.numa_node < 0 && numa.size() == 1 ? numa[0].id() : info.numa_node);
    g->set_mig_profile(info.mig_profile);
    g->set_parent_uuid(info.parent_uuid);
    g->set_pci_bus_id(info.pci_bus_id);
    g->set_fake(info.fake);
    if (info.minor >= 0) g->set_minor(info.minor);
  }
}

absl::StatusOr<std::vector<v1::NumaNode>> ReadNumaNodes(const InventoryOptions& o,
                                                        const std::vector<uint32_t>& cpus,
                                                        uint64_t mem) {
  std::vector<v1::NumaNode> numa;
  std::error_code ec;
  std::filesystem::directory_iterator it(o.sysfs_root + "/devices/system/node", ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename();
    uint32_t id = 0;
    if (name.rfind("node", 0) != 0 || !ParseUint(std::string_view(name).substr(4), &id)) continue;
    v1::NumaNode n;
    n.set_id(static_cast<int32_t>(id));
    auto list = ReadSmallFile(it->path().string() + "/cpulist");
    if (!list.ok()) continue;
    auto node_cpus = ParseCpuList(*list);
    if (!node_cpus.ok()) return node_cpus.status();
    for (uint32_t c : *node_cpus) n.add_cpus(c);
    auto node_mem = MemTotal(it->path().string() + "/meminfo");
    n.set_memory_bytes(node_mem.ok() ? *node_mem : 0);
    numa.push_back(std::move(n));
  }
  std::sort(numa.begin(), numa.end(),
            [](const v1::NumaNode& a, const v1::NumaNode& b) { return a.id() < b.id(); });
  if (numa.empty()) {  // kernels without NUMA: one node with everything
    v1::NumaNode n;
    for (uint32_t c : cpus) n.add_cpus(c);
    n.set_memory_bytes(mem);
    numa.push_back(std::move(n));
  }
  return numa;
}

// Physical cores: online CPUs grouped by their thread_siblings_list (a CPU without
// topology files is a core of its own).
absl::Status AddCores(const InventoryOptions& o, const std::vector<uint32_t>& cpus,
                      const std::vector<v1::NumaNode>& numa, v1::Inventory* inv) {
  std::set<uint32_t> online(cpus.begin(), cpus.end());
  std::map<uint32_t, int32_t> node_of;
  for (const auto& n : numa) {
    for (uint32_t c : n.cpus()) node_of[c] = n.id();
  }
  std::set<uint32_t> seen;
  for (uint32_t cpu : cpus) {
    if (seen.count(cpu)) continue;
    std::vector<uint32_t> siblings = {cpu};
    auto text = ReadSmallFile(o.sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu) +
                              "/topology/thread_siblings_list");
    if (text.ok()) {
      auto list = ParseCpuList(*text);
      if (!list.ok()) return list.status();
      siblings.clear();
      for (uint32_t s : *list) {
        if (online.count(s)) siblings.push_back(s);
      }
      if (std::find(siblings.begin(), siblings.end(), cpu) == siblings.end()) {
        siblings.push_back(cpu);
      }
      std::sort(siblings.begin(), siblings.end());
    }
    v1::CpuCore* core = inv->add_cores();
    core->set_id(static_cast<uint32_t>(inv->cores_size() - 1));
    for (uint32_t s : siblings) {
      core->add_cpus(s);
      seen.insert(s);
    }
    core->set_numa_node(node_of.count(cpu) ? node_of[cpu] : -1);
  }
  return absl::OkStatus();
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
  auto online = ReadSmallFile(o.sysfs_root + "/devices/system/cpu/online");
  if (!online.ok()) return online.status();
  auto cpus = ParseCpuList(*online);
  if (!cpus.ok()) return cpus.status();
  if (cpus->empty()) return absl::FailedPreconditionError("no online CPUs in sysfs");
  inv.set_cpus(static_cast<uint32_t>(cpus->size()));
  auto mem = MemTotal(o.proc_root + "/meminfo");
  if (!mem.ok()) return mem.status();
  inv.set_memory_bytes(*mem);
  auto numa = ReadNumaNodes(o, *cpus, *mem);
  if (!numa.ok()) return numa.status();
  if (auto s = AddCores(o, *cpus, *numa, &inv); !s.ok()) return s;
  auto gpus = DiscoverGpus(o, *numa);
  if (!gpus.ok()) return gpus.status();
  AddGpus(*gpus, *numa, &inv);
  for (auto& n : *numa) *inv.add_numa_nodes() = std::move(n);
  inv.set_nic(o.nic);
  inv.set_nic_mbps(o.nic_mbps);
  return inv;
}

}  // namespace baton
