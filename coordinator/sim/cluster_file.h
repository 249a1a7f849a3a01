// The simulator's cluster file (YAML): node groups with a count, so that a 1,000-node
// cluster is a few lines. docs/simulator.md describes every key; docs/examples/ has one.
//
//   node_groups:
//     - name: infer          # nodes infer-0000, infer-0001, ...
//       count: 16
//       gpus: 8              # per node
//       gpu_model: NVIDIA H200
//       numa: 2              # GPUs, cores and memory split evenly over the NUMA nodes
//       cpus: 128
//       memory: 2Ti
//       pool: inference      # "" or left out: the policy's default pool
//       labels: {zone: a}
//       taints: [{key: dedicated, value: inference, effect: NoSchedule}]
//       mig: {profile: 1g.18gb, slices: 7}   # every GPU cut into MIG slices
//       gpu_memory: 80Gi     # each GPU's memory (MPS shares are counted against it)
//       mps_gpus: 2          # the first 2 GPUs of each node offered as MPS pools
//   switch_tree:             # optional: the network (docs/topology.md)
//     nodes_per_leaf: 8      # the nodes, in file order, under leaf-1, leaf-2, ...
//     leaves_per_spine: 32   # and the leaves under spine-1, spine-2, ...
//     slowdown: 0.1          # a gang over k leaves more than it needs runs 1 + 0.1·k times
//                            # as long (0, the default: the network is free)
//
// Read by baton-sim and baton-bench-sim. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/scheduler/cluster_view.h"

namespace baton::sim {

// The switch tree of a cluster file: nodes labelled topology.baton.io/leaf and /spine.
struct SwitchTree {
  uint32_t nodes_per_leaf = 0;  // 0: no tree
  uint32_t leaves_per_spine = 0;
  double slowdown = 0;
};
inline constexpr char kLeafLabel[] = "topology.baton.io/leaf";
inline constexpr char kSpineLabel[] = "topology.baton.io/spine";

struct ClusterFile {
  std::vector<sched::NodeInfo> nodes;
  SwitchTree tree;
};
absl::StatusOr<ClusterFile> ParseCluster(const std::string& yaml, const std::string& source);
absl::StatusOr<ClusterFile> LoadCluster(const std::string& path);

// The nodes alone. InvalidArgument naming the file, line and key of every problem.
absl::StatusOr<std::vector<sched::NodeInfo>> ParseClusterFile(const std::string& yaml,
                                                              const std::string& source);
absl::StatusOr<std::vector<sched::NodeInfo>> LoadClusterFile(const std::string& path);

// One node of a group: GPUs "<name>-g<i>" (MIG slices "<name>-g<i>-s<s>"), NUMA node k
// holding an equal part of the GPUs, cores and memory.
struct NodeShape {
  uint32_t gpus = 8;
  std::string gpu_model = "NVIDIA H200";
  uint32_t numa = 2;
  uint32_t cpus = 128;
  uint64_t memory_bytes = 2ull << 40;
  std::string mig_profile;  // "": whole GPUs
  uint32_t mig_slices = 0;
  uint64_t gpu_memory_bytes = 80ull << 30;
  uint32_t mps_gpus = 0;  // the first this many GPUs are MPS pools (never with MIG)
};
sched::NodeInfo MakeNode(const std::string& name, const NodeShape& shape);

}  // namespace baton::sim
