// The trace-driven simulator: the coordinator's scheduling loop on a simulated clock. It
// keeps the ClusterView the JobManager would build, runs the real Plan (coordinator/
// scheduler) whenever the coordinator would — on a submit, an exit, the end of a cooldown
// or of a minimum runtime, after an eviction or a deferred preemption search, and at
// least every idle interval while jobs wait — and jumps from event to event in between.
// Jobs progress, checkpoint and restart in closed form: an evicted gang leaves after the
// grace and keeps only its committed checkpoints. Used by baton-sim, its benchmark and
// the scheduler's simulation tests. Single-threaded; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sim {

using sched::JobId;
using sched::Time;

struct SimOptions {
  Time min_pass_interval_ms = 250;        // the coordinator's tick: events within share a pass
  Time idle_pass_interval_ms = 60'000;    // while jobs wait, a pass at least this often
  Time grace_ms = 30'000;                 // an evicted gang leaves this long after eviction
  bool save_on_eviction = false;          // true: the exit checkpoint keeps all progress
  Time checkpoint_interval_ms = 300'000;  // Submit(job, work_ms): periodic checkpoints
  Time sample_interval_ms = 0;            // timeline samples this often; 0: none
  // The network's price (docs/topology.md): a gang whose nodes span k more leaves
  // (topology.baton.io/leaf; an unlabelled node is a leaf of its own) than
  // ceil(nodes / nodes_per_leaf) progresses 1 + topology_slowdown·k times slower.
  uint32_t nodes_per_leaf = 0;  // 0: no tree, no slowdown
  double topology_slowdown = 0;
};

// What a job does once placed, beyond its request.
struct SimWork {
  Time work_ms = 0;                 // running time to finish (checkpoints, restarts apart)
  Time checkpoint_interval_ms = 0;  // of progress between checkpoints; 0: never
  Time checkpoint_cost_ms = 0;      // each checkpoint stalls progress this long
  Time restart_cost_ms = 0;         // a resumed attempt spends this before progressing
};

// One job's history, for the report.
struct SimJob {
  std::string tenant;
  std::string priority_class;
  uint32_t gpus = 0;  // all nodes together
  uint32_t nodes = 1;
  uint32_t gpu_share_percent = 0;  // an MPS share of one GPU
  Time submitted = 0;
  Time first_start = -1;  // -1: never started
  Time finished_at = -1;  // -1: not finished
  uint32_t attempts = 0;
  uint32_t evictions = 0;
  double lost_gpu_ms = 0;        // GPU time of attempts that no checkpoint kept
  uint32_t spread_attempts = 0;  // attempts over more leaves than the gang needs
  bool finished = false;
  bool infeasible = false;  // the scheduler said it can never run (admission refuses it)
  std::string infeasible_reason;
};

// The cluster at one instant (timeline).
struct SimSample {
  Time t = 0;
  double busy_gpus = 0;  // an MPS share counts as its fraction of a GPU
  uint32_t running = 0;
  uint32_t pending = 0;
  std::map<std::string, double> tenant_gpus;
  // MPS pool capacity no waiting share fits (units left where no pending share's units,
  // memory and user fit), in GPUs; and the pools' whole capacity.
  double stranded_gpus = 0;
  double pool_gpus = 0;
};

class Simulator {
 public:
  using PassObserver =
      std::function<void(const sched::ClusterView&, Time now, const sched::Decisions&)>;

  Simulator(std::vector<sched::NodeInfo> nodes, sched::Policy policy, SimOptions options,
            Time start = 0);

  // The job is submitted at job.submitted (now, if that has passed) and finishes after
  // work.work_ms of progress. Ids must be unique.
  void Submit(sched::PendingJob job, SimWork work);
  // As above with the options' checkpoint interval and no costs; submitted now.
  void Submit(sched::PendingJob job, Time work_ms);
  // Runs events and passes up to and including `t`; the clock ends at `t`.
  void RunUntil(Time t);
  // RunUntil(now + step) with a pass at the end, whatever happened (the fixed-step loop).
  void Step(Time step_ms = 10'000);
  // Runs until nothing is running, waiting or still to be submitted (or what waits can
  // never start: nothing runs, nothing is to come, no cooldown ends), or `limit`.
  void RunToCompletion(Time limit);
  bool Idle() const;
  bool Stuck() const;

  // Called after every pass that ran Plan, with its input and output (the tests check
  // invariants). A pass with no pending job out of its cooldown decides nothing: it is
  // counted in passes() but neither planned nor observed.
  void set_pass_observer(PassObserver observer) { observer_ = std::move(observer); }

  Time now() const { return now_; }
  Time start() const { return start_; }
  const sched::ClusterView& view() const { return view_; }
  const sched::Policy& policy() const { return policy_; }
  const std::map<JobId, SimJob>& jobs() const { return jobs_; }
  // GPU-milliseconds each tenant (class) held since the start or ResetGpuMs.
  const std::map<std::string, double>& gpu_ms() const { return gpu_ms_; }
  const std::map<std::string, double>& class_gpu_ms() const { return class_gpu_ms_; }
  void ResetGpuMs();
  const std::vector<SimSample>& samples() const { return samples_; }
  uint32_t total_gpus() const { return total_gpus_; }
  uint64_t evictions() const { return evictions_; }
  uint64_t passes() const { return passes_; }
  uint64_t plans() const { return plans_; }  // passes that ran Plan
  // Wall time spent inside Plan, for the benchmark's profile.
  double plan_seconds() const { return plan_seconds_; }
  // Jobs in the view (running and pending) summed over the passes that ran Plan: Plan's
  // cost grows with them, so time per job in view compares runs that hold more or less.
  uint64_t plan_view_jobs() const { return plan_view_jobs_; }

 private:
  enum class Kind : uint8_t { kExit, kSubmit, kWake, kMinRuntime, kSample };
  struct Event {
    Time t;
    Kind kind;
    uint64_t seq;
    JobId job;
    uint32_t attempt;
    bool operator>(const Event& o) const {
      return t != o.t ? t > o.t : kind != o.kind ? kind > o.kind : seq > o.seq;
    }
  };
  struct Live {
    sched::PendingJob spec;
    SimWork work;
    Time committed_ms = 0;    // progress the last checkpoint kept
    Time attempt_start = 0;   // when the current attempt was placed
    Time progress_start = 0;  // attempt_start + restart cost
    Time finish_at = 0;       // of the current attempt, if nobody evicts it
    Time evicted_at = -1;     // -1: not evicted
    int64_t cooldown_ms = 0;  // of the pending eviction
    uint32_t attempt = 0;
    double gpus = 0;  // held: whole GPUs and slices one each, an MPS share its fraction
    int32_t class_value = 0;
    bool running = false;
    double slow = 1;  // wall time per unit of progress in this attempt (the slowdown)
  };

  void Loop(Time until, bool stop_when_idle);
  void Push(Time t, Kind kind, JobId job, uint32_t attempt = 0);
  void Want(Time at);
  void AdvanceClock(Time t);
  void Handle(const Event& e);
  void Enqueue(const sched::PendingJob& job);
  void Pass();
  void Apply(const sched::Decisions& d);
  void Start(const sched::Placement& p);
  void Evict(const sched::Eviction& e);
  void Exit(JobId id, bool finished);
  void Hold(const Live& live, int sign);
  // Checkpoints the current attempt completed by `t` (none before progress starts).
  uint64_t CheckpointsBy(const Live& live, Time t) const;
  // Progress of the current attempt by `t`, checkpoint stalls excluded.
  Time ProgressBy(const Live& live, Time t) const;
  Time Remaining(const Live& live) const { return live.work.work_ms - live.committed_ms; }
  // Wall time between two checkpoints (progress slowed, plus the checkpoint's own cost).
  Time Period(const Live& live) const;
  // Leaves beyond the fewest a placement of this many nodes needs.
  uint32_t ExtraLeaves(const sched::Placement& p) const;
  void Sample();
  void Stranded(SimSample& s) const;

  sched::ClusterView view_;
  sched::Policy policy_;
  SimOptions options_;
  Time start_;
  Time now_;
  sched::UsageLedger ledger_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  bool pass_wanted_ = false;
  Time pass_at_ = 0;
  Time last_pass_ = -1;
  std::unordered_map<JobId, Live> live_;
  std::unordered_map<JobId, size_t> running_index_;  // view_.running position
  std::map<JobId, SimJob> jobs_;
  std::map<std::string, double> held_tenant_, held_class_;
  std::map<std::string, double> gpu_ms_, class_gpu_ms_;
  double busy_gpus_ = 0;
  uint32_t total_gpus_ = 0;
  uint64_t to_submit_ = 0;
  std::vector<JobId> reserved_;  // pending jobs holding a preemption reservation
  // The highest class among the jobs the last pass left waiting for room or quota: a
  // gang whose minimum runtime ends can become a victim only of a class at least its own.
  int32_t waiting_class_ = std::numeric_limits<int32_t>::min();
  std::vector<SimSample> samples_;
  PassObserver observer_;
  uint64_t evictions_ = 0;
  uint64_t passes_ = 0;
  uint64_t plans_ = 0;
  double plan_seconds_ = 0;
  uint64_t plan_view_jobs_ = 0;
};

}  // namespace baton::sim
