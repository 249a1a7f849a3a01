#include "coordinator/scheduler/first_fit.h"

#include <algorithm>

namespace baton::sched {

bool Admits(const NodeView& node, const GangRequest& req) {
  if (node.pool != req.pool) return false;
  for (const auto& [key, value] : req.selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  return std::all_of(node.taints.begin(), node.taints.end(),
                     [&](const Taint& t) { return Tolerates(t, req.tolerations); });
}

std::optional<std::vector<NodeGrant>> FirstFit(const GangRequest& req,
                                               const std::vector<NodeView>& nodes) {
  std::vector<NodeGrant> grants;
  for (size_t i = 0; i < nodes.size() && grants.size() < req.nodes; ++i) {
    const NodeView& n = nodes[i];
    if (!n.schedulable || !Admits(n, req) || !req.per_node.Fits(n.free)) continue;
    if (n.free_gpu_ids.size() < req.per_node.gpus) continue;
    grants.push_back(
        NodeGrant{i, std::vector<std::string>(n.free_gpu_ids.begin(),
                                              n.free_gpu_ids.begin() + req.per_node.gpus)});
  }
  if (grants.size() < req.nodes) return std::nullopt;
  return grants;
}

}  // namespace baton::sched
