// The coordinator's Prometheus metrics, fed by the JobManager as a JobObserver and read
// at every scrape (MetricsServer). Names follow Kueue and kube-scheduler (docs/recipes.md):
// base units, `_total` on counters, and labels from bounded sets only (class, tenant,
// state, reason, kind). The one job_id label is on baton_job_evictions_total, whose series
// exist only while an evicted job is unfinished (the "same job evicted again and again"
// alert needs it); histograms never carry one. tests/coordinator/metrics_test.cc holds the
// names and label sets to a list (scripts/monitoring uses them).
// Until the JobManager keeps a fair-share UsageLedger and calls OnTenantShares, tenants'
// decayed usage is estimated here from the GPUs their running jobs hold.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/observer.h"
#include "coordinator/policy.h"
#include "coordinator/scheduler/fair_share.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace baton {

class CoordinatorMetrics : public JobObserver, public prometheus::Collectable {
 public:
  CoordinatorMetrics(Clock* clock, const Policy& policy);

  void OnJobLoaded(const v1::Job& job) override;
  void OnNodeLoaded(const v1::Node& node) override;
  void OnEvent(const v1::Event& event, const v1::Job* job) override;
  void OnSchedulePass(double seconds) override;
  void OnStoreWrite(double seconds) override;
  void OnSubmitThrottled(const std::string& tenant, const std::string& limit) override;
  void OnJobsDeleted(size_t n) override;
  void OnTenantShares(const std::vector<sched::TenantShare>& shares) override;

  // Brings the tenants' usage up to now, then every family.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  void OnTransition(const v1::Event& ev, const v1::Job& job);
  // Moves a job between the pending/running/cooldown gauges and the tenants' GPUs.
  void Count(const v1::Job& job, v1::JobState state, double delta);
  void SetNodesLocked();
  void RefreshTenantsLocked() const;
  void RefreshOldestLocked() const;
  void TrackPendingLocked(const v1::Job& job, v1::JobState to, int64_t since_ms);

  Clock* const clock_;
  const Policy policy_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Family<prometheus::Gauge>& running_;
  prometheus::Family<prometheus::Gauge>& cooldown_;
  prometheus::Family<prometheus::Counter>& submitted_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Histogram>& admission_wait_;
  prometheus::Family<prometheus::Counter>& preemptions_;
  prometheus::Family<prometheus::Counter>& topology_spread_;
  prometheus::Family<prometheus::Counter>& job_evictions_;  // live evicted jobs only
  prometheus::Family<prometheus::Gauge>& oldest_pending_;
  prometheus::Family<prometheus::Histogram>& lost_work_;
  prometheus::Family<prometheus::Histogram>& pass_;
  prometheus::Family<prometheus::Histogram>& store_write_;
  prometheus::Family<prometheus::Gauge>& usage_;
  prometheus::Family<prometheus::Gauge>& usage_share_;
  prometheus::Family<prometheus::Gauge>& weight_share_;
  prometheus::Family<prometheus::Gauge>& tenant_gpus_;
  // Per MPS pool (node, GPU UUID): the shares of live attempts, percent and GPU memory.
  prometheus::Family<prometheus::Gauge>& pool_percent_;
  prometheus::Family<prometheus::Gauge>& pool_memory_;
  prometheus::Family<prometheus::Gauge>& agents_;
  prometheus::Family<prometheus::Gauge>& nodes_;
  prometheus::Family<prometheus::Counter>& nodes_lost_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Family<prometheus::Counter>& throttled_;
  prometheus::Family<prometheus::Counter>& deleted_;
  prometheus::Family<prometheus::Counter>& events_;

  mutable std::mutex mu_;  // the maps below, the ledger
  std::map<std::string, v1::NodeState> node_states_;
  std::map<std::string, double> running_gpus_;  // per tenant, jobs holding resources
  struct Waiting {
    prometheus::Labels class_tenant;
    int64_t since_ms = 0;  // when it last became PENDING
  };
  std::map<uint64_t, Waiting> pending_since_;           // PENDING jobs by id
  mutable std::set<prometheus::Labels> oldest_labels_;  // oldest_pending_ series that exist
  mutable sched::UsageLedger ledger_;                   // the estimate until OnTenantShares
  bool external_shares_ = false;
  std::set<std::string> share_tenants_;  // tenants whose share gauges exist
};

}  // namespace baton
