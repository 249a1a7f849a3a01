// The scheduler's input: one snapshot of the nodes, the running gangs and the pending
// jobs, as plain structs (no protobuf). The coordinator fills one per pass (README.md in
// this folder says from what); Plan and Explain only read it. Plain data and one pure
// helper; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace baton::sched {

using Time = int64_t;  // unix milliseconds, always passed in by the caller
using JobId = uint64_t;

// A node taint is tolerated when key and effect match and, unless `exists` is set, the
// value matches too (an empty toleration effect tolerates every effect).
struct Taint {
  std::string key, value, effect;
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct Toleration {
  std::string key, value, effect;
  bool exists = false;
};

// True when one of the tolerations tolerates the taint.
bool Tolerates(const Taint& taint, const std::vector<Toleration>& tolerations);

struct GpuInfo {
  std::string uuid;         // "GPU-…", or "MIG-…" for a slice
  std::string model;        // "NVIDIA H200"
  int32_t numa = -1;        // NUMA node id; -1 when unknown
  std::string mig_profile;  // slices: "1g.18gb"; "" for a whole GPU
  std::string parent_uuid;  // slices: the physical GPU; a whole GPU that is some slice's
                            // parent is never handed out whole
  // Offered as an MPS pool (the agent's choice, never with MIG): shares of it, 100 compute
  // units and `memory_bytes`, go to inference jobs of one owner at a time; never whole.
  bool mps = false;
  uint64_t memory_bytes = 0;  // its memory; an MPS pool's shares are counted against it
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

struct NumaInfo {
  int32_t id = 0;
  std::vector<uint32_t> cpus;  // logical CPU ids
  uint64_t memory_bytes = 0;
  // The physical core of each of `cpus` (an id unique on the node): SMT siblings share
  // one. Empty: each CPU is a core of its own. Inference's exclusive CPUs are whole cores.
  std::vector<uint32_t> core;
  friend bool operator==(const NumaInfo&, const NumaInfo&) = default;
};

// A CPU without a known core is a core of its own: an id apart from any core's.
inline uint32_t OwnCore(uint32_t cpu) { return uint32_t{1} << 31 | cpu; }
// The core of `m.cpus[i]`.
inline uint32_t CoreOf(const NumaInfo& m, size_t i) {
  return i < m.core.size() ? m.core[i] : OwnCore(m.cpus[i]);
}

struct NodeInfo {
  std::string name;
  bool schedulable = true;  // false: connected no more; counted for feasibility only
  uint64_t cpu_millis = 0;  // capacity
  uint64_t memory_bytes = 0;
  std::vector<NumaInfo> numa;  // empty (or GPUs without a known NUMA node): one domain
  std::vector<GpuInfo> gpus;   // whole GPUs and MIG slices; only the first 64 are used
  std::string pool;            // "" is the policy's default pool
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  // CPUs of its largest physical core (SMT siblings), set with `NumaInfo.core`; inference
  // holds whole cores, so its CPUs here round up to a multiple of this.
  uint32_t smt = 1;
  friend bool operator==(const NodeInfo&, const NodeInfo&) = default;
};

// Where a gang's nodes sit in the network's switch tree (docs/topology.md): within one
// domain of `level` (one of the policy's topology levels, e.g. "leaf"), or in as few as
// its size allows. Empty level: anywhere (a class default may still apply).
struct TopologyRequest {
  std::string level;
  bool required = false;  // within one domain or not at all; false: preferred
  // A required request relaxes to preferred once the job has been eligible this long
  // (milliseconds since the later of its submit and the end of its last cooldown,
  // Slurm's --switches=N@max-time); 0: never.
  int64_t wait_ms = 0;
};

// What a job asks for: `nodes` nodes, each giving the per-node amounts (JobSpec fields).
// The GPU kind of an MPS pool and of a request for a share of one, in the pass's table of
// kinds beside the MIG profiles ("1g.18gb"): a share goes only to a GPU an agent offers
// as an MPS pool (GpuInfo::mps), never to a whole GPU.
inline constexpr char kMpsShareKind[] = "mps";

struct JobRequest {
  uint32_t nodes = 1;
  uint32_t ranks_per_node = 1;
  uint32_t gpus_per_node = 0;  // whole GPUs, or MIG slices when mig_profile is set
  uint64_t cpu_millis_per_node = 0;
  uint64_t memory_bytes_per_node = 0;
  std::string mig_profile;  // "" for whole GPUs
  std::string gpu_model;    // "" for any; else a substring of the GPU model
  bool mpi = false;         // launch mode mpi: NCCL training, never on MIG slices
  // An MPS share of one GPU (1..100 percent; 0: whole GPUs) with the GPU memory it may use
  // as the agent enforces it (the request plus its class's headroom): what is counted.
  uint32_t gpu_share_percent = 0;
  uint64_t gpu_memory_bytes = 0;
  std::string pool;                             // "" is the policy's default pool
  std::map<std::string, std::string> selector;  // node labels that must match
  std::vector<Toleration> tolerations;
  TopologyRequest topology;  // level "": the class's default, if it has one
};

// One rank's NUMA binding as it was placed (from the Decisions that placed the gang).
struct HeldRank {
  int32_t numa = -1;           // -1: spans NUMA nodes
  std::vector<uint32_t> cpus;  // exclusive cores (inference ranks); empty otherwise
};

// What a running gang holds on one node.
struct HeldNode {
  std::string node;
  std::vector<std::string> gpu_uuids;
  uint64_t cpu_millis = 0;
  uint64_t memory_bytes = 0;
  std::vector<HeldRank> ranks;  // optional; without it NUMA use is taken from the GPUs
  // An MPS share: what it holds of its one GPU (gpu_uuids names it); 0: whole GPUs.
  uint32_t gpu_share_percent = 0;
  uint64_t gpu_memory_bytes = 0;
};

// A gang that holds resources: placed, running, or told to leave and not yet gone.
struct RunningGang {
  JobId id = 0;
  std::string tenant;
  // Whom it runs as: an MPS pool holds shares of one user at a time (read for shares only).
  std::string user;
  std::string priority_class;
  std::vector<HeldNode> nodes;
  Time started = 0;          // attempt start; the minimum runtime counts from here
  Time last_checkpoint = 0;  // when the last committed checkpoint was reported; 0: none
  uint32_t evictions = 0;    // evictions of this job so far (cooldown doubling)
  bool evicting = false;     // told to checkpoint and exit; still holds what it holds
  JobId evicting_for = 0;    // the preemptor whose room this eviction makes (0: none)
};

struct PendingJob {
  JobId id = 0;
  std::string tenant;
  std::string user;  // whom it runs as (read for MPS shares only: one user per pool)
  std::string priority_class;
  JobRequest request;
  Time submitted = 0;
  Time cooldown_until = 0;  // evicted jobs (and failure backoffs) wait until then
  uint32_t evictions = 0;
  // The nodes of this job's preemption reservation in the previous pass's Decisions;
  // passed back until the job starts so that the victims' room stays its own.
  std::vector<std::string> reserved_nodes;
  // Why it is held ("held by alice: waiting for the dataset"); empty when it is not. A
  // held job keeps its place in line and is never started (Outcome::kHeld).
  std::string held;
  // What it waits for ("waiting for job 17 to succeed (it is RUNNING)"); empty when every
  // job it depends on has ended as it asks. Like a hold: in line, never started
  // (Outcome::kDependency; a hold's reason wins).
  std::string waits_for;
};

struct ClusterView {
  std::vector<NodeInfo> nodes;
  std::vector<RunningGang> running;
  std::vector<PendingJob> pending;
  // Decayed GPU-seconds per tenant as of the pass (UsageLedger::Snapshot); missing: 0.
  std::map<std::string, double> usage;
};

}  // namespace baton::sched
