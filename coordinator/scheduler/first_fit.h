// First-fit gang placement: the foundation's placement until the full scheduler (fair
// share, quotas, preemption) lands in this folder. A pure function of plain structs —
// no protobuf, gRPC or RocksDB — so it is tested and benchmarked on its own.
// Thread-safe (no state).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/resources.h"
#include "coordinator/scheduler/cluster_view.h"

namespace baton::sched {

// One node as placement sees it: what is free now and what it is.
struct NodeView {
  std::string name;
  bool schedulable = true;                // connected and not lost
  Resources free;                         // free.gpus == free_gpu_ids.size()
  std::vector<std::string> free_gpu_ids;  // in device order
  std::string pool;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
};

// A gang: `nodes` distinct nodes, each giving `per_node`.
struct GangRequest {
  uint32_t nodes = 1;
  Resources per_node;
  std::string pool;
  std::map<std::string, std::string> selector;
  std::vector<Toleration> tolerations;
};

struct NodeGrant {
  size_t node_index;                 // into the NodeView vector
  std::vector<std::string> gpu_ids;  // the lowest free GPUs of that node
};

// True when the node's pool, labels and taints admit the request (ignores capacity).
bool Admits(const NodeView& node, const GangRequest& req);

// The first `req.nodes` admitting nodes (in the given order) that fit, or nullopt: all
// of the gang or nothing.
std::optional<std::vector<NodeGrant>> FirstFit(const GangRequest& req,
                                               const std::vector<NodeView>& nodes);

}  // namespace baton::sched
