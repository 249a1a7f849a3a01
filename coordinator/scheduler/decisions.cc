#include "coordinator/scheduler/decisions.h"

namespace baton::sched {

const std::string& Reason::Empty() {
  static const std::string* empty = new std::string();
  return *empty;
}

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPlaced:
      return "placed";
    case Outcome::kWaitForCapacity:
      return "waiting for capacity";
    case Outcome::kWaitForQuota:
      return "waiting for quota";
    case Outcome::kInCooldown:
      return "in cooldown";
    case Outcome::kReserved:
      return "reserved";
    case Outcome::kInfeasible:
      return "infeasible";
    case Outcome::kHeld:
      return "held";
    case Outcome::kDependency:
      return "waiting for dependency";
  }
  return "unknown";
}

std::string_view EvictionReasonText(EvictionReason r) {
  return r == EvictionReason::kHigherClass ? "preempted by higher class" : "quota reclaimed";
}

std::vector<HeldNode> ToHeld(const ClusterView& view, const Placement& placement) {
  std::vector<HeldNode> out;
  for (const NodePlacement& p : placement.nodes) {
    const NodeInfo& node = view.nodes[p.node];
    HeldNode h;
    h.node = node.name;
    for (uint32_t g : p.gpus) h.gpu_uuids.push_back(node.gpus[g].uuid);
    h.cpu_millis = p.cpu_millis;
    h.memory_bytes = p.memory_bytes;
    for (const RankBinding& r : p.ranks) h.ranks.push_back(HeldRank{r.numa, r.cpus});
    h.gpu_share_percent = p.gpu_share_percent;
    h.gpu_memory_bytes = p.gpu_memory_bytes;
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace baton::sched
