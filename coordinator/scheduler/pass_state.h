// Internal to the scheduler: the working state of one Plan pass, built from a
// ClusterView by BuildPass — interned classes, tenants, node groups, hardware classes and
// request shapes; each node's free GPUs, cores and memory (per NUMA node); the running
// gangs' holds; the quota book and node reservations. Used by fit, placement,
// preemption and plan. Not thread-safe: one pass, one thread.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"
#include "coordinator/scheduler/quota.h"

namespace baton::sched::internal {

constexpr uint32_t kMaxGpus = 64;
constexpr uint32_t kMaxNuma = 8;
// MPS pools counted per node: the first kMaxMps GPUs a node offers as pools (an HGX node
// has 8 GPUs); further ones are not offered.
constexpr uint32_t kMaxMps = 8;
constexpr uint32_t kShareUnits = 100;  // an MPS pool's compute, in percent of the GPU
constexpr uint32_t kNone = 0xffffffffu;

struct NumaFree {
  uint64_t millis = 0, mem = 0;
  uint32_t cores = 0;           // cores no inference rank holds exclusively
  uint32_t service_ranks = 0;   // inference ranks bound here
  uint32_t training_ranks = 0;  // other ranks bound here (a spanning rank: on every one)
};

// What is left of one MPS pool: compute units, memory (MiB) and the one user whose shares
// it holds (an MPS server runs as one uid), cleared with its last share.
struct ShareFree {
  uint32_t mem_mib = 0;
  uint16_t owner = 0;  // 0: none; else Pass::user_ids + 1
  uint8_t units = 0;
  uint8_t shares = 0;  // shares held
};

// The mutable part of a node: small and flat, copied freely for trial fits.
struct NodeFree {
  uint64_t gpus = 0;           // free entries of NodeInfo::gpus (bit i: entry i); an MPS
                               // pool's bit stays set: `share` says what is left of it
  uint64_t service_held = 0;   // entries inference holds
  uint64_t training_held = 0;  // entries everything else holds
  uint64_t millis = 0, mem = 0;
  NumaFree numa[kMaxNuma];
  ShareFree share[kMaxMps];  // the node's MPS pools, in entry order (NodeHw::mps)
};

// What a node is, fixed for the pass.
struct NodeHw {
  uint32_t group = 0;     // eligibility group: pool, labels, taints
  uint32_t hw = 0;        // hardware class: nodes that fit exactly the same requests
  uint32_t gpu_base = 0;  // this node's entries in Pass::entry_*
  uint32_t gpu_count = 0;
  uint32_t numa_count = 1;
  bool numa_aware = false;  // false: one domain, ranks get numa -1
  bool has_mig = false;
  bool schedulable = true;
  uint64_t mps = 0;    // entries offered as MPS pools (at most kMaxMps of them)
  uint64_t whole = 0;  // entries that may be handed out whole
  uint64_t numa_gpus[kMaxNuma] = {};
  int32_t numa_id[kMaxNuma] = {};
  uint32_t numa_cpu_offset[kMaxNuma + 1] = {};  // slot k's cores in the concatenated list
  uint32_t smt = 1;  // CPUs of its largest physical core (SMT siblings); inference holds
                     // whole cores, so its CPUs on this node round up to a multiple of this
};

// The pool index (in NodeFree::share) of MPS entry e.
inline uint32_t ShareSlot(const NodeHw& hw, uint32_t e) {
  return static_cast<uint32_t>(std::popcount(hw.mps & ((uint64_t{1} << e) - 1)));
}

// The CPUs an inference rank group asking for `cpus` holds on a node: whole cores.
inline uint32_t WholeCoreCpus(const NodeHw& hw, uint32_t cpus) {
  return (cpus + hw.smt - 1) / hw.smt * hw.smt;
}

struct Group {
  std::string pool;
  uint32_t first_node = 0;  // a member: labels and taints are read from it
  std::vector<uint32_t> nodes;
};

struct Filter {
  std::string pool;
  std::map<std::string, std::string> selector;  // of the jobs with this filter
  std::vector<Toleration> tolerations;
  std::vector<int8_t> eligible;  // per group: -1 unknown, 0, 1
  bool listed = false;           // `groups` computed
  std::vector<uint32_t> groups;  // the eligible groups, ascending
  // The lowest group_min_victim and group_min_quota_victim over `groups` (preemption.cc);
  // `victims_known` once computed.
  bool victims_known = false;
  int64_t min_victim = 0, min_quota_victim = 0;
};

// A request reduced to what placement needs; jobs with equal shapes place alike.
struct Shape {
  uint32_t id = 0;  // index in Pass::shapes
  uint32_t filter = 0;
  uint32_t nodes = 1, ranks = 1, gpus = 0;
  uint64_t cpu = 0, mem = 0;
  int32_t profile = -1;  // MIG profile id; -1: whole GPUs
  int32_t model = -1;    // GPU model filter id; -1: any
  bool service = false;  // inference class
  bool mpi = false;
  // An MPS share (gpus is 1): percent of one pool, its memory in MiB, its user (as
  // ShareFree::owner). 0: whole GPUs or slices.
  uint32_t share = 0, share_mem_mib = 0;
  uint16_t owner = 0;
  // The policy's inference_numa_exclusive: inference and training never share a NUMA node.
  bool numa_exclusive = false;
  // Rank groups placed on one NUMA node each: every rank, or one group of all ranks
  // when GPUs do not split evenly over them.
  uint32_t groups = 1, group_gpus = 0, group_cores = 0;
  uint64_t group_millis = 0, group_mem = 0;
  Amount ask;  // the whole gang: per-node amounts × nodes
  // Topology (topology.h): the level index in Pass::topo, -1 when the gang goes anywhere;
  // required: within one domain of it or not at all (a relaxed wait makes it preferred).
  int32_t topo_level = -1;
  bool topo_required = false;
  bool topo_relaxes = false;  // required for now: its wait will make it preferred
};

// One level of the switch tree as the pass sees it. Nodes of one group share every
// label, so a domain is a property of the group.
struct TopoLevel {
  std::vector<uint32_t> group_domain;         // per group; kNone: its nodes lack the label
  std::vector<std::string> names;             // per domain: the label's value
  std::vector<uint32_t> parent;               // per domain: its domain one level up; kNone: none
  std::vector<std::vector<uint32_t>> groups;  // per domain: its groups, ascending
};

struct Hold {
  uint32_t node = 0;
  uint32_t gang = 0;
  uint64_t gpus = 0;
  uint64_t millis = 0, mem = 0;
  bool service = false;
  // An MPS share: its pool's index and what it holds of it (gpus names the pool's entry).
  uint8_t share_slot = 0, share = 0;
  uint16_t owner = 0;
  uint32_t share_mem_mib = 0;
  uint64_t numa_millis[kMaxNuma] = {};
  uint64_t numa_mem[kMaxNuma] = {};
  uint32_t numa_ranks[kMaxNuma] = {};  // ranks bound to each NUMA node
  uint8_t numa_count = kMaxNuma;       // its node's NUMA slots (the rest are zero)
};

struct Gang {
  const RunningGang* src = nullptr;
  uint32_t cls = kNone;  // kNone: unknown class, never a victim
  uint32_t tenant = 0;
  uint32_t hold_begin = 0, hold_end = 0;  // in Pass::holds
  Amount amount;
  double age_s = 0;         // seconds since the last committed checkpoint (or the start)
  double lost = 0;          // GPUs × age_s: the work an eviction now throws away
  bool protected_ = false;  // inside its class's minimum runtime
  bool evicting = false;
};

// A pending job with what the pass reads of it most, kept compact: the queue walk visits
// jobs in queue order, not memory order.
struct Job {
  const PendingJob* src = nullptr;
  JobId id = 0;
  Time submitted = 0;
  Time cooldown_until = 0;
  bool has_reserved_nodes = false;  // src->reserved_nodes is not empty
  bool awaits_victims = false;      // some leaving gang makes room for it
  bool holds = false;               // room is held for it from before this pass (plan.cc)
  bool borrower = false;            // its tenant would go over nominal (order.cc)
  bool held = false;                // src->held or src->waits_for is not empty: never started
  bool timed = false;  // its shape depends on the time: a required topology that relaxes
  uint32_t cls = kNone;
  uint32_t tenant = 0;
  uint32_t shape = 0;
};

struct NodeReservation {
  int32_t class_value = 0;  // jobs of this class or lower may not use the node
  JobId job = 0;            // kNoJob when free
};
constexpr JobId kNoJob = 0;

// What a pass builds from the nodes and interns of the jobs: the same from pass to pass
// while no node changes, so Scheduler (scheduler.h) keeps it and copies it into each pass.
struct PassTables {
  std::vector<const PriorityClass*> classes;
  absl::flat_hash_map<std::string, uint32_t> class_ids;
  std::vector<std::string> tenant_names;
  absl::flat_hash_map<std::string, uint16_t> user_ids;  // users of MPS shares, from 1
  absl::flat_hash_map<std::string, uint32_t> tenant_ids;

  std::vector<NodeHw> hw;
  std::vector<NodeFree> free;                     // capacity; a pass takes the holds off
  std::vector<std::vector<uint8_t>> cores_taken;  // per node; empty: none taken
  std::vector<uint16_t> entry_profile;            // 0: whole GPU; else profile id + 1
  std::vector<uint16_t> entry_model;
  std::vector<uint64_t> entry_phys;  // entries sharing the entry's physical GPU
  std::vector<std::string> profiles, models;
  std::vector<std::vector<uint32_t>> profile_nodes;  // schedulable nodes with the profile
  std::vector<Group> groups;
  std::vector<TopoLevel> topo;                 // policy.topology_levels, lowest first
  std::vector<uint32_t> hw_rep;                // a node of each hardware class
  std::vector<NodeFree> hw_capacity;           // each hardware class empty
  std::vector<uint32_t> hw_group_count;        // nodes per (group, hw): index g * hws + h
  std::vector<uint32_t> hw_group_schedulable;  // the schedulable ones among them
  std::vector<std::string> model_filters;
  std::vector<std::vector<bool>> model_match;  // [filter][node model]
  std::vector<Filter> filters;
  std::vector<Shape> shapes;
  absl::flat_hash_map<uint64_t, int8_t> alignable;  // (hw, shape) -> 0/1
};

struct Pass : PassTables {
  Pass(const ClusterView& v, const Policy& p, Time t) : view(v), policy(p), now(t) {}

  const ClusterView& view;
  const Policy& policy;
  Time now;

  std::vector<double> tenant_key;  // decayed usage / weight
  QuotaBook quota;
  std::vector<NodeReservation> reserved;
  // Every node reserved in this pass, in the order reserved (a node may appear more than
  // once; `reserved` says whether it still is): placement's counts leave them out.
  std::vector<uint32_t> reserved_list;

  std::vector<Gang> gangs;
  std::vector<Hold> holds;
  std::vector<uint32_t> node_hold_begin;  // node i's holds: node_holds[begin[i], begin[i+1])
  std::vector<uint32_t> node_holds;       // indices into holds, by node
  // Beside node_holds, what the victim search's first look reads of each hold, packed:
  // it visits every node, and a Hold is a hundred bytes of which it needs these.
  struct HoldBrief {
    uint32_t gang = 0;
    uint32_t gpus = 0;  // whole GPUs and slices held
    uint64_t millis = 0, mem = 0;
    double age_s = 0;  // the gang's
  };
  std::vector<HoldBrief> hold_brief;
  std::vector<Job> jobs;               // view.pending, same order; plan.cc puts them in queue order
  bool jobs_ordered = false;           // jobs are in queue order but for borrowers (order.h)
  absl::flat_hash_set<JobId> awaited;  // preemptors that leaving gangs make room for
  std::vector<Amount> leaving;         // per tenant: what its evicting gangs still hold
  // Per tenant: what its running gangs borrowed at the start of the pass. Reclaim takes
  // back only that: a gang placed in this pass cannot be evicted in it, so borrowing that
  // this pass's placements added never costs the tenant a gang it ran within its nominal.
  std::vector<Amount> start_borrowed;
  // What tenant `t` still borrows, as reclaim sees it: the start's borrowing less what is
  // leaving.
  Amount StillBorrowed(uint32_t t) const { return Minus(start_borrowed[t], leaving[t]); }
  // Per group: the lowest class value of a gang that could be evicted at the start of the
  // pass (preemptible, not protected, not leaving), of any tenant and of tenants with a
  // quota (possible borrowers). INT64_MAX: none.
  std::vector<int64_t> group_min_victim, group_min_quota_victim;
  std::vector<int64_t> shape_feasible;     // per shape: nodes that could hold it; -1 unknown
  std::vector<Reason> shape_wait;          // per shape: the waiting-for-capacity text
  std::vector<int64_t> shape_min_domains;  // per shape: LargestDomain; -1 unknown
  // The most units and MiB any MPS pool of a schedulable node has left (each on its own:
  // a bound, not a pool's pair); -1: to be counted again (a share was placed).
  int32_t most_pool_units = -1;
  uint64_t most_pool_mib = 0;
  // Share shapes no node took in this pass, with the class value they were tried at: room
  // only shrinks within a pass, so a share asking at least as much of everything, no
  // higher, finds none either (FindMigNodes).
  std::vector<std::pair<uint32_t, int32_t>> shares_refused;
  struct QuotaText {
    int verdict = -1;
    Amount use;
    Reason text;
  };
  std::vector<QuotaText> quota_text;  // per tenant: the last waiting-for-quota text
  // Per (shape, class, tenant): why such a job can never run, "" when it can.
  // Indexed by shape, then keyed by class << 32 | tenant (a 64-bit key hashes faster).
  std::vector<absl::flat_hash_map<uint64_t, Reason>> infeasible;
};

inline const Amount& Ask(const Pass& pass, const Job& job) { return pass.shapes[job.shape].ask; }

// Builds nodes, gangs (with their holds applied), quotas and jobs.
void BuildPass(Pass& pass);
// The node part of BuildPass (node_build.cc); returns the schedulable capacity.
Amount BuildNodes(Pass& pass);
// The parts of BuildPass that Scheduler calls on its own: classes and the policy's
// tenants (first, before anything else is interned); the gangs of view.running with
// their holds applied; quotas (after gangs and jobs) and the victim index.
void InternPolicy(Pass& pass);
void BuildGangs(Pass& pass);
// What BuildGangs looks up by name for one gang, which Scheduler keeps while the node
// tables stay: class, tenant, the user of its MPS shares; per HeldNode its node (kNone:
// not in the view) and the GPU entries its uuids name.
struct GangRefs {
  bool resolved = false;  // false: not looked up yet (or to look up again)
  uint32_t cls = kNone, tenant = 0;
  uint16_t owner = 0;
  std::vector<uint32_t> nodes;
  std::vector<uint64_t> gpus;
  // Not inference: its holds, made once (they read the nodes' hardware only; an
  // inference gang's take cores on the pass's nodes, and are made in each pass).
  bool training = false;
  std::vector<Hold> holds;
};
GangRefs ResolveGang(Pass& pass, const RunningGang& r,
                     const absl::flat_hash_map<std::string, uint32_t>& node_ids);
// BuildGangs with each gang of view.running resolved (`refs` in the same order).
void BuildGangs(Pass& pass, const std::vector<GangRefs>& refs);
void BuildQuota(Pass& pass, const Amount& capacity);
void IndexVictims(Pass& pass);

// The walk of Plan (plan.cc) over a built pass.
Decisions PlanPass(Pass& pass);

// Interns pending jobs into a pass's tables (filters, shapes, tenants, users): BuildPass
// makes one per pass, Scheduler keeps one beside its tables from pass to pass.
class JobInterner {
 public:
  // The job as the pass reads it, at `pass.now` (only a `timed` job depends on it);
  // `awaits_victims` is left false.
  Job Intern(Pass& pass, const PendingJob& p);

 private:
  using ShapeKey =
      std::tuple<uint32_t, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, int32_t, int32_t, bool,
                 bool, int32_t, bool, bool, uint32_t, uint64_t, uint16_t>;
  absl::flat_hash_map<std::string, uint32_t> filter_ids_;
  absl::flat_hash_map<ShapeKey, uint32_t> shape_ids_;
};
void IndexProfilesAndClasses(Pass& pass);
// A node's part of the schedulable capacity, counted for it while it is schedulable.
Amount NodeCapacity(const Pass& pass, uint32_t node);
// A built node connected again or no more (NodeInfo::schedulable), as BuildNodes would
// have built it: the counts and lists of schedulable nodes follow (not the capacity).
void SetSchedulable(Pass& pass, uint32_t node, bool schedulable);

// Node facts shared by the modules.
const std::string& NormalPool(const Pass& pass, const std::string& pool);
bool Eligible(Pass& pass, uint32_t filter, uint32_t group);
const std::vector<uint32_t>& EligibleGroups(Pass& pass, uint32_t filter);
// False when a node reserved for another job at `class_value` or above blocks a job.
inline bool Usable(const Pass& pass, uint32_t node, int32_t class_value, JobId job) {
  const NodeReservation& r = pass.reserved[node];
  return r.job == kNoJob || r.job == job || class_value > r.class_value;
}

// Indices into pass.holds of the holds on a node.
inline std::span<const uint32_t> HoldsOn(const Pass& pass, uint32_t node) {
  uint32_t begin = pass.node_hold_begin[node];
  return {pass.node_holds.data() + begin, pass.node_hold_begin[node + 1] - begin};
}

// Applies or releases a gang's hold on a node's free state.
void Release(const Hold& hold, NodeFree& free);
void Reapply(const Hold& hold, NodeFree& free);

}  // namespace baton::sched::internal
