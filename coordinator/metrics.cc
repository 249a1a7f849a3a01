#include "coordinator/metrics.h"

#include <algorithm>

#include "common/version.h"
#include "proto/rpc_util.h"

namespace baton {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

enum class Bucket { kNone, kPending, kRunning, kCooldown };

Bucket BucketOf(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_PENDING:
      return Bucket::kPending;
    case v1::JOB_STATE_SCHEDULED:
    case v1::JOB_STATE_RUNNING:
    case v1::JOB_STATE_PREEMPTING:
      return Bucket::kRunning;  // holds its resources
    case v1::JOB_STATE_COOLDOWN:
      return Bucket::kCooldown;
    default:
      return Bucket::kNone;
  }
}

// Whole GPUs and MIG slices count one each, an MPS share its fraction (as the scheduler's
// ledger counts them).
double GpusOf(const v1::Job& job) {
  if (job.spec().gpu_share_percent() > 0) return job.spec().gpu_share_percent() / 100.0;
  return job.spec().nodes() * job.spec().gpus_per_node();
}

prometheus::Labels ClassTenant(const v1::Job& job) {
  return {{"class", job.spec().priority_class()}, {"tenant", job.spec().tenant()}};
}

prometheus::Labels EvictedLabels(const v1::Job& job) {
  return {{"class", job.spec().priority_class()},
          {"job_id", std::to_string(job.id())},
          {"tenant", job.spec().tenant()}};
}

const prometheus::Histogram::BucketBoundaries kWaitBuckets = {
    0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400};
const prometheus::Histogram::BucketBoundaries kLostBuckets = {
    1, 10, 60, 300, 900, 1800, 3600, 14400, 57600, 230400, 921600};
const prometheus::Histogram::BucketBoundaries kPassBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
const prometheus::Histogram::BucketBoundaries kWriteBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};

}  // namespace

CoordinatorMetrics::CoordinatorMetrics(Clock* clock, const Policy& policy)
    : clock_(clock),
      policy_(policy),
      registry_(std::make_shared<prometheus::Registry>()),
      pending_(BuildGauge()
                   .Name("baton_pending_jobs")
                   .Help("Jobs waiting to be scheduled (PENDING), by priority class and tenant")
                   .Register(*registry_)),
      running_(BuildGauge()
                   .Name("baton_running_jobs")
                   .Help("Jobs holding resources (SCHEDULED, RUNNING or PREEMPTING)")
                   .Register(*registry_)),
      cooldown_(BuildGauge()
                    .Name("baton_cooldown_jobs")
                    .Help("Evicted jobs waiting out their cooldown (COOLDOWN)")
                    .Register(*registry_)),
      submitted_(BuildCounter()
                     .Name("baton_jobs_submitted_total")
                     .Help("Jobs accepted by Submit")
                     .Register(*registry_)),
      finished_(BuildCounter()
                    .Name("baton_jobs_finished_total")
                    .Help("Jobs that reached a terminal state (succeeded, failed, cancelled)")
                    .Register(*registry_)),
      retries_(BuildCounter()
                   .Name("baton_job_retries_total")
                   .Help("Attempts requeued by the restart policy (reason: failure, "
                         "service_exit)")
                   .Register(*registry_)),
      admission_wait_(BuildHistogram()
                          .Name("baton_admission_wait_seconds")
                          .Help("Time from submit to the job's first start (all ranks running)")
                          .Register(*registry_)),
      preemptions_(BuildCounter()
                       .Name("baton_preemptions_total")
                       .Help("Evicted attempts by reason (node_lost, preempted, ...)")
                       .Register(*registry_)),
      topology_spread_(BuildCounter()
                           .Name("baton_topology_spread_gangs_total")
                           .Help("Topology-bound gangs placed over more domains of their level "
                                 "than their size needs, by class")
                           .Register(*registry_)),
      job_evictions_(BuildCounter()
                         .Name("baton_job_evictions_total")
                         .Help("Evictions of each job not yet finished that was evicted at least "
                               "once (series go when the job ends)")
                         .Register(*registry_)),
      oldest_pending_(BuildGauge()
                          .Name("baton_pending_oldest_seconds")
                          .Help("How long the longest-waiting PENDING job of the class and "
                                "tenant has waited since it last became pending")
                          .Register(*registry_)),
      lost_work_(BuildHistogram()
                     .Name("baton_preemption_lost_work_gpu_seconds")
                     .Help("GPU-seconds each eviction lost (run since the last checkpoint)")
                     .Register(*registry_)),
      pass_(BuildHistogram()
                .Name("baton_scheduling_pass_duration_seconds")
                .Help("Duration of scheduling passes over a non-empty queue")
                .Register(*registry_)),
      store_write_(BuildHistogram()
                       .Name("baton_store_write_duration_seconds")
                       .Help("Latency of synced store writes (one per group commit)")
                       .Register(*registry_)),
      usage_(BuildGauge()
                 .Name("baton_tenant_decayed_usage_gpu_seconds")
                 .Help("Tenant's GPU-seconds, decayed with the fair-share half-life")
                 .Register(*registry_)),
      usage_share_(BuildGauge()
                       .Name("baton_tenant_usage_share")
                       .Help("Tenant's part of all tenants' decayed usage, 0..1")
                       .Register(*registry_)),
      weight_share_(BuildGauge()
                        .Name("baton_tenant_weight_share")
                        .Help("Tenant's fair share: its weight over the weights shown, 0..1")
                        .Register(*registry_)),
      tenant_gpus_(BuildGauge()
                       .Name("baton_tenant_running_gpus")
                       .Help("GPUs the tenant's jobs hold")
                       .Register(*registry_)),
      pool_percent_(BuildGauge()
                        .Name("baton_mps_pool_allocated_percent")
                        .Help("Compute of an MPS pool GPU its jobs' shares hold, percent")
                        .Register(*registry_)),
      pool_memory_(BuildGauge()
                       .Name("baton_mps_pool_allocated_memory_bytes")
                       .Help("GPU memory of an MPS pool GPU its jobs' shares hold")
                       .Register(*registry_)),
      agents_(BuildGauge()
                  .Name("baton_agents_connected")
                  .Help("Node agents connected now (nodes READY)")
                  .Register(*registry_)),
      nodes_(BuildGauge()
                 .Name("baton_nodes")
                 .Help("Known nodes by state (ready, disconnected, lost)")
                 .Register(*registry_)),
      nodes_lost_(BuildCounter()
                      .Name("baton_nodes_lost_total")
                      .Help("Nodes declared lost (no contact past lease + margin)")
                      .Register(*registry_)),
      refused_(BuildCounter()
                   .Name("baton_submissions_refused_total")
                   .Help("Specs refused at submit, by the field or rule at fault")
                   .Register(*registry_)),
      throttled_(BuildCounter()
                     .Name("baton_submissions_throttled_total")
                     .Help("Submits refused for fair use, by tenant and limit (rate, waiting)")
                     .Register(*registry_)),
      deleted_(BuildCounter()
                   .Name("baton_jobs_deleted_total")
                   .Help("Finished jobs deleted with their events after --retention")
                   .Register(*registry_)),
      events_(BuildCounter()
                  .Name("baton_events_total")
                  .Help("Events recorded in the event log, by kind")
                  .Register(*registry_)),
      ledger_(policy.fair_share_half_life_s * 1000, clock->NowMs()) {
  BuildGauge()
      .Name("baton_build_info")
      .Help("Always 1: the version of this build")
      .Register(*registry_)
      .Add({{"component", "coordinator"}, {"version", Version()}})
      .Set(1);
  std::lock_guard<std::mutex> lock(mu_);
  SetNodesLocked();
}

void CoordinatorMetrics::Count(const v1::Job& job, v1::JobState state, double delta) {
  switch (BucketOf(state)) {
    case Bucket::kPending:
      pending_.Add(ClassTenant(job)).Increment(delta);
      break;
    case Bucket::kRunning: {
      running_.Add(ClassTenant(job)).Increment(delta);
      std::lock_guard<std::mutex> lock(mu_);
      ledger_.Advance(clock_->NowMs(), running_gpus_);  // charge the GPUs held until now
      double& gpus = running_gpus_[job.spec().tenant()];
      gpus = delta > 0 ? gpus + GpusOf(job) : std::max(0.0, gpus - GpusOf(job));
      if (const uint32_t share = job.spec().gpu_share_percent();
          share > 0 && job.attempts_size() > 0 && job.attempts().rbegin()->placement_size() == 1 &&
          job.attempts().rbegin()->placement(0).gpu_ids_size() == 1) {
        const v1::NodeAssignment& p = job.attempts().rbegin()->placement(0);
        prometheus::Labels l{{"node", p.node()}, {"gpu", p.gpu_ids(0)}};
        pool_percent_.Add(l).Increment(delta * share);
        pool_memory_.Add(l).Increment(delta * static_cast<double>(job.spec().gpu_memory_bytes()));
      }
      break;
    }
    case Bucket::kCooldown:
      cooldown_.Add(ClassTenant(job)).Increment(delta);
      break;
    case Bucket::kNone:
      break;
  }
}

void CoordinatorMetrics::OnJobLoaded(const v1::Job& job) {
  Count(job, job.state(), +1);
  if (job.evictions() > 0 && !IsTerminal(job.state())) {
    job_evictions_.Add(EvictedLabels(job)).Increment(job.evictions());
  }
  // A recovered job waits since its submit or its last attempt's end.
  int64_t since = job.attempts_size() ? job.attempts().rbegin()->ended_ms() : job.submitted_ms();
  std::lock_guard<std::mutex> lock(mu_);
  TrackPendingLocked(job, job.state(), since ? since : job.submitted_ms());
}

void CoordinatorMetrics::TrackPendingLocked(const v1::Job& job, v1::JobState to, int64_t since_ms) {
  if (to == v1::JOB_STATE_PENDING) {
    pending_since_[job.id()] = Waiting{ClassTenant(job), since_ms};
  } else {
    pending_since_.erase(job.id());
  }
}

void CoordinatorMetrics::OnNodeLoaded(const v1::Node& node) {
  std::lock_guard<std::mutex> lock(mu_);
  node_states_[node.name()] = node.state();
  SetNodesLocked();
}

void CoordinatorMetrics::OnEvent(const v1::Event& ev, const v1::Job* job) {
  events_.Add({{"kind", EventKindName(ev.kind())}}).Increment();
  switch (ev.kind()) {
    case v1::EVENT_KIND_UNSPECIFIED:
    case v1::EVENT_KIND_TRANSITION:
      if (job) OnTransition(ev, *job);
      break;
    case v1::EVENT_KIND_EVICTION:
      preemptions_.Add({{"reason", ev.code()}}).Increment();
      if (job) job_evictions_.Add(EvictedLabels(*job)).Increment();
      if (ev.has_lost_gpu_seconds()) {
        lost_work_.Add({{"reason", ev.code()}}, kLostBuckets).Observe(ev.lost_gpu_seconds());
      }
      break;
    case v1::EVENT_KIND_SCHEDULING:
      if (job && ev.code() == "placed" && job->attempts_size() > 0) {
        const v1::Attempt& a = job->attempts(job->attempts_size() - 1);
        if (a.topology_domains_size() > static_cast<int>(a.topology_min_domains())) {
          topology_spread_.Add({{"class", job->spec().priority_class()}}).Increment();
        }
      }
      break;
    case v1::EVENT_KIND_QUOTA_REFUSAL:  // refused at submit (a job held by quota has an id)
      if (ev.job_id() == 0) refused_.Add({{"reason", ev.code()}}).Increment();
      break;
    case v1::EVENT_KIND_NODE: {
      std::lock_guard<std::mutex> lock(mu_);
      node_states_[ev.node()] = ev.node_state();
      if (ev.node_state() == v1::NODE_STATE_LOST) nodes_lost_.Add({}).Increment();
      SetNodesLocked();
      break;
    }
    default:
      break;
  }
}

void CoordinatorMetrics::OnTransition(const v1::Event& ev, const v1::Job& job) {
  v1::JobState from = ev.from(), to = ev.to();
  if (from == to) return;
  Count(job, from, -1);
  Count(job, to, +1);
  const std::string& cls = job.spec().priority_class();
  if (from == v1::JOB_STATE_UNSPECIFIED) submitted_.Add(ClassTenant(job)).Increment();
  if (IsTerminal(to)) {
    finished_.Add({{"class", cls}, {"state", StateName(to)}, {"tenant", job.spec().tenant()}})
        .Increment();
    if (job_evictions_.Has(EvictedLabels(job))) {
      job_evictions_.Remove(&job_evictions_.Add(EvictedLabels(job)));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TrackPendingLocked(job, to, ev.time_ms());
  }
  if (to == v1::JOB_STATE_PENDING && !ev.code().empty()) {
    retries_.Add({{"class", cls}, {"reason", ev.code()}}).Increment();
  }
  if (to == v1::JOB_STATE_RUNNING) {
    int started = 0;  // the attempt now starting has its started_ms already
    for (const auto& a : job.attempts()) started += a.started_ms() != 0;
    if (started == 1) {
      double wait = static_cast<double>(ev.time_ms() - job.submitted_ms()) / 1000.0;
      admission_wait_.Add({{"class", cls}}, kWaitBuckets).Observe(std::max(0.0, wait));
    }
  }
}

void CoordinatorMetrics::OnSchedulePass(double seconds) {
  pass_.Add({}, kPassBuckets).Observe(seconds);
}

void CoordinatorMetrics::OnStoreWrite(double seconds) {
  store_write_.Add({}, kWriteBuckets).Observe(seconds);
}

void CoordinatorMetrics::OnSubmitThrottled(const std::string& tenant, const std::string& limit) {
  throttled_.Add({{"tenant", tenant}, {"limit", limit}}).Increment();
}

void CoordinatorMetrics::OnJobsDeleted(size_t n) {
  deleted_.Add({}).Increment(static_cast<double>(n));
}

void CoordinatorMetrics::OnTenantShares(const std::vector<sched::TenantShare>& shares) {
  std::lock_guard<std::mutex> lock(mu_);
  external_shares_ = true;
  std::set<std::string> now;
  for (const auto& s : shares) {
    prometheus::Labels l{{"tenant", s.tenant}};
    usage_.Add(l).Set(s.usage_gpu_seconds);
    usage_share_.Add(l).Set(s.usage_share);
    weight_share_.Add(l).Set(s.weight_share);
    tenant_gpus_.Add(l).Set(s.running_gpus);
    now.insert(s.tenant);
  }
  for (const auto& gone : share_tenants_) {
    if (now.count(gone)) continue;
    prometheus::Labels l{{"tenant", gone}};
    for (auto* f : {&usage_, &usage_share_, &weight_share_, &tenant_gpus_}) f->Remove(&f->Add(l));
  }
  share_tenants_ = std::move(now);
}

void CoordinatorMetrics::SetNodesLocked() {
  std::map<v1::NodeState, int> by_state = {
      {v1::NODE_STATE_READY, 0}, {v1::NODE_STATE_DISCONNECTED, 0}, {v1::NODE_STATE_LOST, 0}};
  for (const auto& [name, s] : node_states_) ++by_state[s];
  for (const auto& [s, n] : by_state) {
    if (s != v1::NODE_STATE_UNSPECIFIED) nodes_.Add({{"state", NodeStateName(s)}}).Set(n);
  }
  agents_.Add({}).Set(by_state[v1::NODE_STATE_READY]);
}

// The estimate used until OnTenantShares: decayed GPU-seconds of what runs, weights from
// the policy, over every tenant with usage or running GPUs.
void CoordinatorMetrics::RefreshTenantsLocked() const {
  if (external_shares_) return;
  ledger_.Advance(clock_->NowMs(), running_gpus_);
  std::map<std::string, double> usage = ledger_.Snapshot();
  for (const auto& [tenant, gpus] : running_gpus_) usage.emplace(tenant, 0.0);
  double total_usage = 0, total_weight = 0;
  for (const auto& [tenant, u] : usage) {
    total_usage += u;
    total_weight += policy_.Tenant(tenant).weight;
  }
  for (const auto& [tenant, u] : usage) {
    prometheus::Labels l{{"tenant", tenant}};
    auto gpus = running_gpus_.find(tenant);
    usage_.Add(l).Set(u);
    usage_share_.Add(l).Set(total_usage > 0 ? u / total_usage : 0);
    weight_share_.Add(l).Set(total_weight > 0 ? policy_.Tenant(tenant).weight / total_weight : 0);
    tenant_gpus_.Add(l).Set(gpus == running_gpus_.end() ? 0 : gpus->second);
  }
}

void CoordinatorMetrics::RefreshOldestLocked() const {
  std::map<prometheus::Labels, int64_t> oldest;
  for (const auto& [id, w] : pending_since_) {
    auto [it, added] = oldest.emplace(w.class_tenant, w.since_ms);
    if (!added) it->second = std::min(it->second, w.since_ms);
  }
  int64_t now = clock_->NowMs();
  for (const auto& l : oldest_labels_) {
    if (!oldest.count(l)) oldest_pending_.Add(l).Set(0);  // nobody of theirs waits now
  }
  for (const auto& [l, since] : oldest) {
    oldest_pending_.Add(l).Set(static_cast<double>(std::max<int64_t>(0, now - since)) / 1000.0);
    oldest_labels_.insert(l);
  }
}

std::vector<prometheus::MetricFamily> CoordinatorMetrics::Collect() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RefreshTenantsLocked();
    RefreshOldestLocked();
  }
  return registry_->Collect();
}

}  // namespace baton
