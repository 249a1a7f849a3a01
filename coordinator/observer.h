// JobObserver: what the JobManager tells an onlooker (the Prometheus metrics in
// coordinator/metrics.h) about the cluster as it changes: the state it recovered, every
// event it records, scheduling passes, store writes and tenants' fair-share standing.
// The JobManager calls it under its own mutex (store writes: on the committer thread),
// so implementations must be quick, must not block and must not call back into it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "coordinator/scheduler/explain.h"
#include "proto/api.pb.h"

namespace baton {

class JobObserver {
 public:
  virtual ~JobObserver() = default;

  // Recover(): every job and node as loaded, before any event.
  virtual void OnJobLoaded(const v1::Job& /*job*/) {}
  virtual void OnNodeLoaded(const v1::Node& /*node*/) {}
  // Every event as it is recorded, in log order, with its job as it was before the
  // event (null for events about no job). The event becomes durable shortly after.
  virtual void OnEvent(const v1::Event& /*event*/, const v1::Job* /*job*/) {}
  // A submit refused for fair use (SubmitLimiter) by `tenant` ("" when its tenant was not
  // known); `limit` is "rate" or "waiting". Such refusals are not events.
  virtual void OnSubmitThrottled(const std::string& /*tenant*/, const std::string& /*limit*/) {}
  // Retention deleted `n` finished jobs with their events.
  virtual void OnJobsDeleted(size_t /*n*/) {}
  // A scheduling pass over a non-empty queue took `seconds`.
  virtual void OnSchedulePass(double /*seconds*/) {}
  // A synced store write took `seconds`.
  virtual void OnStoreWrite(double /*seconds*/) {}
  // Tenants' decayed usage and shares (sched::Shares over the pass's UsageLedger). Once
  // called, it replaces the observer's own running-GPU estimate.
  virtual void OnTenantShares(const std::vector<sched::TenantShare>& /*shares*/) {}
};

// Reports the lifetime of a scope as a scheduling pass.
class PassTimer {
 public:
  explicit PassTimer(JobObserver* observer)
      : observer_(observer), start_(std::chrono::steady_clock::now()) {}
  ~PassTimer() {
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start_;
    observer_->OnSchedulePass(took.count());
  }
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;

 private:
  JobObserver* const observer_;
  const std::chrono::steady_clock::time_point start_;
};

}  // namespace baton
