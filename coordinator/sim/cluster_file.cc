#include "coordinator/sim/cluster_file.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/ids.h"
#include "common/resources.h"

namespace baton::sim {
namespace {

constexpr uint32_t kMaxNodes = 200'000;

// Problems with where they are: "FILE:LINE: node_groups[0].gpus: ...".
class Problems {
 public:
  explicit Problems(std::string source) : source_(std::move(source)) {}
  void Add(const YAML::Node& at, const std::string& key, const std::string& what) {
    int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    list_.push_back(source_ + ":" + std::to_string(line) + ": " + key + ": " + what);
  }
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    std::string text = list_.front();
    for (size_t i = 1; i < list_.size(); ++i) text += "\n" + list_[i];
    return absl::InvalidArgumentError(text);
  }

 private:
  std::string source_;
  std::vector<std::string> list_;
};

template <typename T>
bool Read(Problems& p, const YAML::Node& n, const std::string& key, T* out) {
  if (!n) return false;
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
    *out = n.as<T>();
    return true;
  } catch (const YAML::Exception&) {
    p.Add(n, key, "'" + (n.IsScalar() ? n.Scalar() : std::string("...")) + "' is not valid");
    return false;
  }
}

void ReadGroup(Problems& p, const YAML::Node& g, const std::string& w,
               std::vector<sched::NodeInfo>& out) {
  static const char* kKeys[] = {"name", "count",    "gpus",      "gpu_model", "numa",
                                "cpus", "memory",   "pool",      "labels",    "taints",
                                "mig",  "mps_gpus", "gpu_memory"};
  if (!g.IsMap()) return p.Add(g, w, "expected a map");
  for (const auto& kv : g) {
    std::string k = kv.first.Scalar();
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) {
      p.Add(kv.first, w, "unknown key '" + k + "'");
    }
  }
  std::string name;
  uint32_t count = 0;
  NodeShape shape;
  if (!Read(p, g["name"], w + ".name", &name)) p.Add(g, w + ".name", "a group needs a name");
  if (!name.empty() && !IsValidName(name)) p.Add(g["name"], w + ".name", "invalid name");
  if (!Read(p, g["count"], w + ".count", &count)) p.Add(g, w + ".count", "a group needs a count");
  if (count == 0 || count > kMaxNodes) {
    p.Add(g["count"], w + ".count", "must be from 1 to " + std::to_string(kMaxNodes));
  }
  Read(p, g["gpus"], w + ".gpus", &shape.gpus);
  if (shape.gpus > 64) p.Add(g["gpus"], w + ".gpus", "at most 64 GPUs per node");
  Read(p, g["gpu_model"], w + ".gpu_model", &shape.gpu_model);
  Read(p, g["numa"], w + ".numa", &shape.numa);
  if (shape.numa == 0 || shape.numa > 16) p.Add(g["numa"], w + ".numa", "must be from 1 to 16");
  Read(p, g["cpus"], w + ".cpus", &shape.cpus);
  if (shape.cpus < shape.numa) p.Add(g["cpus"], w + ".cpus", "at least one per NUMA node");
  std::string memory;
  if (Read(p, g["memory"], w + ".memory", &memory)) {
    absl::StatusOr<uint64_t> b = ParseBytes(memory);
    if (!b.ok() || *b == 0) p.Add(g["memory"], w + ".memory", "'" + memory + "' is not a size");
    if (b.ok()) shape.memory_bytes = *b;
  }
  if (const YAML::Node mig = g["mig"]) {
    Read(p, mig["profile"], w + ".mig.profile", &shape.mig_profile);
    Read(p, mig["slices"], w + ".mig.slices", &shape.mig_slices);
    if (shape.mig_profile.empty() || shape.mig_slices == 0 || shape.mig_slices > 7) {
      p.Add(mig, w + ".mig", "needs a profile and 1 to 7 slices per GPU");
    }
  }
  std::string gpu_memory;
  if (Read(p, g["gpu_memory"], w + ".gpu_memory", &gpu_memory)) {
    absl::StatusOr<uint64_t> b = ParseBytes(gpu_memory);
    if (!b.ok() || *b == 0) {
      p.Add(g["gpu_memory"], w + ".gpu_memory", "'" + gpu_memory + "' is not a size");
    }
    if (b.ok()) shape.gpu_memory_bytes = *b;
  }
  Read(p, g["mps_gpus"], w + ".mps_gpus", &shape.mps_gpus);
  if (shape.mps_gpus > shape.gpus) {
    p.Add(g["mps_gpus"], w + ".mps_gpus",
          "more MPS pools than the node's " + std::to_string(shape.gpus) + " GPUs");
  }
  if (shape.mps_gpus > 0 && !shape.mig_profile.empty()) {
    p.Add(g["mps_gpus"], w + ".mps_gpus", "a GPU in MIG mode is never an MPS pool");
  }
  sched::NodeInfo proto = MakeNode(name, shape);
  Read(p, g["pool"], w + ".pool", &proto.pool);
  if (const YAML::Node labels = g["labels"]) {
    if (!labels.IsMap()) p.Add(labels, w + ".labels", "expected a map");
    for (const auto& kv : labels) proto.labels[kv.first.Scalar()] = kv.second.Scalar();
  }
  if (const YAML::Node taints = g["taints"]) {
    if (!taints.IsSequence()) p.Add(taints, w + ".taints", "expected a list");
    for (size_t i = 0; taints.IsSequence() && i < taints.size(); ++i) {
      sched::Taint t;
      std::string tw = w + ".taints[" + std::to_string(i) + "]";
      if (!Read(p, taints[i]["key"], tw + ".key", &t.key)) p.Add(taints[i], tw, "needs a key");
      Read(p, taints[i]["value"], tw + ".value", &t.value);
      Read(p, taints[i]["effect"], tw + ".effect", &t.effect);
      proto.taints.push_back(t);
    }
  }
  if (count == 0 || count > kMaxNodes || out.size() + count > kMaxNodes) return;
  for (uint32_t i = 0; i < count; ++i) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%04u", i);
    sched::NodeInfo n = proto;
    n.name = name + suffix;
    for (sched::GpuInfo& gpu : n.gpus) {
      gpu.uuid.replace(0, name.size(), n.name);
      if (!gpu.parent_uuid.empty()) gpu.parent_uuid.replace(0, name.size(), n.name);
    }
    out.push_back(std::move(n));
  }
}

// switch_tree: {nodes_per_leaf, leaves_per_spine, slowdown}.
void ReadTree(Problems& p, const YAML::Node& t, SwitchTree& out) {
  if (!t.IsMap()) return p.Add(t, "switch_tree", "expected a map");
  for (const auto& kv : t) {
    std::string k = kv.first.Scalar();
    if (k != "nodes_per_leaf" && k != "leaves_per_spine" && k != "slowdown") {
      p.Add(kv.first, "switch_tree", "unknown key '" + k + "'");
    }
  }
  if (!Read(p, t["nodes_per_leaf"], "switch_tree.nodes_per_leaf", &out.nodes_per_leaf) ||
      out.nodes_per_leaf == 0) {
    p.Add(t, "switch_tree.nodes_per_leaf", "needs a count of at least 1");
  }
  out.leaves_per_spine = UINT32_MAX;  // left out: one spine
  Read(p, t["leaves_per_spine"], "switch_tree.leaves_per_spine", &out.leaves_per_spine);
  if (out.leaves_per_spine == 0) p.Add(t, "switch_tree.leaves_per_spine", "must be at least 1");
  Read(p, t["slowdown"], "switch_tree.slowdown", &out.slowdown);
  if (!(out.slowdown >= 0 && out.slowdown <= 10)) {
    p.Add(t["slowdown"], "switch_tree.slowdown", "must be from 0 to 10");
  }
}

}  // namespace

sched::NodeInfo MakeNode(const std::string& name, const NodeShape& s) {
  sched::NodeInfo n;
  n.name = name;
  n.cpu_millis = uint64_t{s.cpus} * 1000;
  n.memory_bytes = s.memory_bytes;
  for (uint32_t k = 0; k < s.numa; ++k) {
    sched::NumaInfo m;
    m.id = static_cast<int32_t>(k);
    for (uint32_t c = k * s.cpus / s.numa; c < (k + 1) * s.cpus / s.numa; ++c) m.cpus.push_back(c);
    m.memory_bytes = s.memory_bytes / s.numa;
    n.numa.push_back(m);
  }
  for (uint32_t g = 0; g < s.gpus; ++g) {
    sched::GpuInfo gpu;
    gpu.uuid = name + "-g" + std::to_string(g);
    gpu.model = s.gpu_model;
    gpu.numa = static_cast<int32_t>(g * s.numa / s.gpus);
    gpu.memory_bytes = s.gpu_memory_bytes;
    gpu.mps = g < s.mps_gpus && s.mig_slices == 0;
    n.gpus.push_back(gpu);
    for (uint32_t k = 0; k < s.mig_slices; ++k) {
      sched::GpuInfo slice = gpu;
      slice.uuid = gpu.uuid + "-s" + std::to_string(k);
      slice.mig_profile = s.mig_profile;
      slice.parent_uuid = gpu.uuid;
      n.gpus.push_back(slice);
    }
  }
  return n;
}

absl::StatusOr<ClusterFile> ParseCluster(const std::string& yaml, const std::string& source) {
  Problems p(source);
  ClusterFile out;
  std::vector<sched::NodeInfo>& nodes = out.nodes;
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap() || !root["node_groups"] || !root["node_groups"].IsSequence()) {
      p.Add(root, "node_groups", "the file needs a list node_groups");
      return p.ToStatus();
    }
    for (const auto& kv : root) {
      if (kv.first.Scalar() != "node_groups" && kv.first.Scalar() != "switch_tree") {
        p.Add(kv.first, kv.first.Scalar(), "unknown key (the file holds node_groups, switch_tree)");
      }
    }
    const YAML::Node groups = root["node_groups"];
    for (size_t i = 0; i < groups.size(); ++i) {
      ReadGroup(p, groups[i], "node_groups[" + std::to_string(i) + "]", nodes);
    }
    if (const YAML::Node tree = root["switch_tree"]) ReadTree(p, tree, out.tree);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) +
                                      ": malformed YAML: " + e.msg);
  }
  if (absl::Status s = p.ToStatus(); !s.ok()) return s;
  if (nodes.empty()) return absl::InvalidArgumentError(source + ": no nodes");
  const SwitchTree& t = out.tree;
  for (size_t i = 0; t.nodes_per_leaf > 0 && i < nodes.size(); ++i) {
    size_t leaf = i / t.nodes_per_leaf;
    nodes[i].labels[kLeafLabel] = "leaf-" + std::to_string(leaf + 1);
    nodes[i].labels[kSpineLabel] = "spine-" + std::to_string(leaf / t.leaves_per_spine + 1);
  }
  return out;
}

absl::StatusOr<std::vector<sched::NodeInfo>> ParseClusterFile(const std::string& yaml,
                                                              const std::string& source) {
  absl::StatusOr<ClusterFile> c = ParseCluster(yaml, source);
  if (!c.ok()) return c.status();
  return std::move(c->nodes);
}

absl::StatusOr<ClusterFile> LoadCluster(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cluster file " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseCluster(text.str(), path);
}

absl::StatusOr<std::vector<sched::NodeInfo>> LoadClusterFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cluster file " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseClusterFile(text.str(), path);
}

}  // namespace baton::sim
