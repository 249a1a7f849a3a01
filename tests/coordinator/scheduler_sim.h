// A small cluster simulator that drives Plan pass after pass the way the coordinator
// will: jobs need an amount of work, running gangs progress and checkpoint periodically,
// evicted gangs leave after a grace period (keeping only their committed progress unless
// they save on the way out), cooldowns, the usage ledger, reservations passed back.
// Every pass is checked with CheckDecisions. Used by the anti-thrash and fair-share
// tests. Single-threaded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched::testing {

struct SimOptions {
  Time step_ms = 10'000;               // one pass per step
  Time checkpoint_every_ms = 300'000;  // periodic checkpoints while running
  Time grace_ms = 30'000;              // an evicted gang leaves this long after eviction
  bool save_on_eviction = false;       // true: the exit checkpoint keeps all progress
};

struct SimJob {
  std::string tenant;
  uint32_t evictions = 0;
  bool finished = false;
  Time finished_at = 0;
};

class Simulator {
 public:
  Simulator(std::vector<NodeInfo> nodes, Policy policy, SimOptions options);

  // The job becomes pending now and finishes after `work_ms` of running.
  void Submit(PendingJob job, Time work_ms);
  void Step();
  void RunUntil(Time t);

  Time now() const { return now_; }
  const ClusterView& view() const { return view_; }
  const std::map<JobId, SimJob>& jobs() const { return jobs_; }
  // GPU-milliseconds each tenant held since the last ResetGpuMs.
  const std::map<std::string, double>& gpu_ms() const { return gpu_ms_; }
  void ResetGpuMs() { gpu_ms_.clear(); }
  // Rules some pass broke (CheckDecisions), with the time.
  const std::vector<std::string>& problems() const { return problems_; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Progress {
    Time work_ms = 0;
    Time committed_ms = 0;  // progress saved by the last checkpoint
    Time attempt_ms = 0;    // running time of the current attempt
    Time saved_at_ms = 0;   // attempt_ms at its last checkpoint
    Time leaves_at = 0;     // evicted: when the gang is gone
    int64_t cooldown_ms = 0;
  };

  void Advance();
  void Apply(const Decisions& d);
  void Exit(size_t gang);

  ClusterView view_;
  Policy policy_;
  SimOptions options_;
  Time now_ = 0;
  UsageLedger ledger_;
  std::map<JobId, Progress> progress_;
  std::map<JobId, SimJob> jobs_;
  std::map<JobId, PendingJob> specs_;
  std::map<std::string, double> gpu_ms_;
  std::vector<std::string> problems_;
  uint64_t evictions_ = 0;
};

}  // namespace baton::sched::testing
