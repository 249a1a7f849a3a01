// The scheduler's output: placements, evictions, reservations and one outcome per
// pending job, all in queue order. Produced by Plan (plan.h); the coordinator acts on
// them and reports back through the next ClusterView (README.md). Plain data;
// thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"

namespace baton::sched {

enum class Outcome {
  kPlaced,           // start it now on `Placement`
  kWaitForCapacity,  // fits its quota, but no room (and no victims it may evict)
  kWaitForQuota,     // its tenant's quota (or borrowing) does not allow it now
  kInCooldown,       // evicted or backing off until `cooldown_until`
  kReserved,         // room is held for it: victims are leaving, or it heads the line
  kInfeasible,       // can never run on this cluster under this policy
  kHeld,             // held (PendingJob::held): never started until released
  kDependency,       // waits for other jobs to end (PendingJob::waits_for)
};
std::string_view OutcomeName(Outcome o);

struct RankBinding {
  int32_t numa = -1;           // NUMA node id of its GPUs, cores and memory; -1: spans
  std::vector<uint32_t> gpus;  // indices into NodeInfo::gpus
  std::vector<uint32_t> cpus;  // exclusive cores (inference ranks only)
};

struct NodePlacement {
  uint32_t node = 0;           // index into ClusterView::nodes; entry i is node rank i
  std::vector<uint32_t> gpus;  // indices into NodeInfo::gpus, ascending
  uint64_t cpu_millis = 0;
  uint64_t memory_bytes = 0;
  std::vector<RankBinding> ranks;  // one per local rank
  // An MPS share of its one GPU (`gpus` names the pool): percent and GPU memory counted
  // (whole MiB); 0 for whole GPUs and MIG slices.
  uint32_t gpu_share_percent = 0;
  uint64_t gpu_memory_bytes = 0;
};

struct Placement {
  JobId job = 0;
  std::vector<NodePlacement> nodes;
  // A topology-bound gang (docs/topology.md): the domains of its level it spans, by
  // name in node order, and the fewest it could ever span; empty and 0 otherwise.
  std::vector<std::string> topology_domains;
  uint32_t topology_min_domains = 0;
};

enum class EvictionReason { kHigherClass, kQuotaReclaimed };
std::string_view EvictionReasonText(EvictionReason r);

struct Eviction {
  JobId victim = 0;
  JobId preemptor = 0;  // the job whose room it makes
  EvictionReason reason = EvictionReason::kHigherClass;
  double lost_gpu_seconds = 0;  // GPUs × seconds since its last committed checkpoint
  int64_t cooldown_ms = 0;      // wait after it exits, this eviction counted
  std::string message;          // for the victim's event: "preempted by job 7 (inference)"
};

struct Reservation {
  enum class Kind { kHeadOfLine, kPreemption };
  JobId job = 0;
  Kind kind = Kind::kHeadOfLine;
  std::vector<uint32_t> nodes;  // indices into ClusterView::nodes, held for `job` alone
};

// An outcome's text, read as a std::string. Jobs that wait for one reason (their tenant's
// quota, room for their shape, a rule they break) share one text: a pass over a million
// jobs makes a text per tenant and shape, not one per job. Immutable once made.
class Reason {
 public:
  Reason() = default;
  Reason(std::string text)  // NOLINT(google-explicit-constructor): reads as a string
      : text_(std::make_shared<const std::string>(std::move(text))) {}
  Reason(const char* text) : Reason(std::string(text)) {}  // NOLINT
  const std::string& str() const { return text_ ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT
  operator std::string_view() const { return str(); }    // NOLINT
  bool empty() const { return str().empty(); }
  size_t find(std::string_view part, size_t from = 0) const { return str().find(part, from); }
  friend bool operator==(const Reason& a, std::string_view b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& out, const Reason& r) { return out << r.str(); }

 private:
  static const std::string& Empty();
  std::shared_ptr<const std::string> text_;
};

struct JobOutcome {
  JobId job = 0;
  Outcome outcome = Outcome::kWaitForCapacity;
  uint32_t position = 0;  // 1-based place in the queue this pass
  Reason reason;          // human: why it waits, or where it goes
};

struct Decisions {
  std::vector<Placement> placements;
  std::vector<Eviction> evictions;
  std::vector<Reservation> reservations;
  std::vector<JobOutcome> outcomes;  // one per pending job, in queue order
};

// What a placed gang holds, in the form RunningGang takes it back next pass.
std::vector<HeldNode> ToHeld(const ClusterView& view, const Placement& placement);

}  // namespace baton::sched
