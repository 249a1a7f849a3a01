#include "launcher/agent/isolation/isolator.h"

#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "launcher/agent/isolation/gpu_env.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// Stages of SetUpLocked, for undoing a partial one.
enum Stage { kPlanned = 1, kCreated = 2, kNarrowed = 3 };

bool ParseName(const std::string& name, uint64_t* job, uint32_t* attempt) {
  unsigned long long j = 0;
  unsigned a = 0;
  char tail = 0;
  if (std::sscanf(name.c_str(), "job-%llu-a%u%c", &j, &a, &tail) != 2) return false;
  *job = j;
  *attempt = a;
  return true;
}

}  // namespace

Isolator::Isolator(const v1::Inventory& inventory, ClassOptions classes,
                   std::unique_ptr<CgroupDriver> driver, std::unique_ptr<NetCaps> net)
    : inventory_(inventory),
      classes_(classes),
      driver_(std::move(driver)),
      net_(std::move(net)),
      planner_(inventory_, classes_) {}

std::string Isolator::Name(uint64_t job, uint32_t attempt) {
  return "job-" + std::to_string(job) + "-a" + std::to_string(attempt);
}

std::vector<v1::Gpu> Isolator::GpusOf(const std::vector<std::string>& ids) const {
  std::vector<v1::Gpu> out;
  for (const auto& id : ids) {
    for (const auto& g : inventory_.gpus()) {
      if (g.uuid() == id) out.push_back(g);
    }
  }
  return out;
}

std::vector<CharDevice> Isolator::OtherGpusThan(const std::vector<v1::Gpu>& own) const {
  std::set<int32_t> mine;
  for (const auto& g : own) {
    if (g.has_minor()) mine.insert(g.minor());
  }
  std::set<CharDevice> others;
  for (const auto& g : inventory_.gpus()) {
    if (g.has_minor() && !mine.count(g.minor())) {
      others.insert(CharDevice{kNvidiaMajor, static_cast<uint32_t>(g.minor())});
    }
  }
  return std::vector<CharDevice>(others.begin(), others.end());
}

absl::Status Isolator::ApplyPlanLocked(const std::string& name) {
  CpuPlan plan = planner_.PlanFor(name);
  Attempt& a = attempts_[name];
  a.limits.set_cpus(plan.limits.cpus);
  a.limits.set_mems(plan.limits.mems);
  a.limits.set_exclusive_cpus(plan.exclusive);
  a.limits.set_cpu_quota_millis(plan.limits.cpu_quota_millis);
  a.limits.set_cpu_weight(plan.limits.cpu_weight);
  a.limits.set_memory_limit_bytes(plan.limits.memory_max_bytes);
  a.limits.set_narrowed_cpus(plan.narrowed_cpus);
  a.ranks = PlanRanks(inventory_, plan.cpus, plan.mems, a.bindings, a.local_ranks);
  SetRankPlacements(a.ranks, &a.limits);
  return driver_->Apply(name, plan.limits);
}

absl::Status Isolator::ApplyTrainingLocked(const std::string& except) {
  absl::Status first;
  for (const auto& name : planner_.TrainingAttempts()) {
    if (name == except || !attempts_.count(name)) continue;
    absl::Status s = ApplyPlanLocked(name);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

absl::Status Isolator::ApplySelfLocked() {
  // Keepers writing exit records run beside the agent: off inference's cores too.
  absl::Status exit =
      driver_ ? driver_->LimitExitCpus(FormatCpuList(planner_.SharedCpus())) : absl::OkStatus();
  if (!self_) return exit;
  absl::Status self = self_->Apply(planner_.ExclusiveCpuSet());
  return self.ok() ? exit : self;
}

absl::Status Isolator::ManageSelfAffinity(std::shared_ptr<SelfAffinity> self) {
  std::lock_guard<std::mutex> lock(mu_);
  self_ = std::move(self);
  return ApplySelfLocked();
}

void Isolator::UndoLocked(const std::string& name, bool inference, int stage) {
  if (stage >= kCreated) {
    (void)driver_->KillAll(name);
    (void)driver_->Remove(name);
  }
  planner_.Remove(name);
  attempts_.erase(name);
  if (stage >= kNarrowed && inference) (void)ApplyTrainingLocked("");
  if (inference) (void)ApplySelfLocked();
}

absl::StatusOr<PreparedAttempt> Isolator::SetUpLocked(const AttemptRequest& r, bool adopt) {
  const std::string name = Name(r.job_id, r.attempt);
  std::vector<v1::Gpu> gpus = GpusOf(r.gpu_ids);
  PreparedAttempt out;
  if (driver_) {
    CpuDemand d;
    d.inference = r.inference;
    d.cpu_millis = r.cpu_millis;
    d.memory_bytes = r.memory_bytes;
    for (const auto& g : gpus) {
      if (g.numa_node() >= 0) d.numa_nodes.insert(g.numa_node());
    }
    if (r.inference) {  // the cores the scheduler charged its ranks
      for (const auto& b : r.ranks) d.cpus.insert(d.cpus.end(), b.cpus().begin(), b.cpus().end());
    }
    if (auto s = planner_.Add(name, d); !s.ok()) return s;
    attempts_[name].bindings = r.ranks;
    attempts_[name].local_ranks = r.local_ranks;
    int stage = kPlanned;
    absl::Status s = driver_->Create(name);
    std::vector<CharDevice> fenced = OtherGpusThan(gpus);
    if (s.ok()) {
      stage = kCreated;
      s = driver_->LimitPids(name, r.pids_limit);
    }
    // Before any process joins; a re-adopted attempt has its fence already.
    if (s.ok() && !adopt) s = driver_->DenyDevices(name, fenced);
    if (s.ok()) s = ApplyPlanLocked(name);
    // An inference arrival narrows every training attempt, and moves the agent's own
    // threads off its cores, before its ranks start.
    if (s.ok() && r.inference) {
      stage = kNarrowed;
      s = ApplyTrainingLocked(name);
      if (s.ok()) s = ApplySelfLocked();
    }
    Attempt& a = attempts_[name];
    a.inference = r.inference;
    a.limits.set_cgroup(driver_->Path(name));
    a.limits.set_pids_limit(r.pids_limit);
    a.limits.set_fenced_gpus(static_cast<uint32_t>(fenced.size()));
    a.limits.set_kind(r.inference ? v1::WORKLOAD_KIND_INFERENCE : v1::WORKLOAD_KIND_TRAINING);
    // Every attempt's traffic goes to a class: training to its capped one, inference to
    // the priority class (or its own, when its spec caps it).
    bool classified = net_ && !driver_->NetPath(name).empty();
    if (s.ok() && classified) {
      auto cls = net_->Add(name, driver_->NetPath(name), driver_->NetLevel(name),
                           r.spec->network_mbps(), r.inference);
      if (cls.ok()) {
        a.net = true;
        a.capped = !r.inference || r.spec->network_mbps() > 0;
        a.limits.set_net_class(cls->class_id);
        a.limits.set_net_ceil_mbps(cls->ceil_mbps);
      }
      s = cls.status();
    }
    if (!s.ok()) {
      if (!adopt) UndoLocked(name, r.inference, stage);
      return s;
    }
    out.procs_files = driver_->ProcsFiles(name);
    out.limits = a.limits;
    out.ranks = a.ranks;
  } else {  // no cpuset: the ranks' bindings within the whole node
    out.ranks = PlanRanks(inventory_, {}, {}, r.ranks, r.local_ranks);
  }
  GpuEnvInput in;
  in.inference = r.inference;
  in.spec = r.spec;
  in.gpus = gpus;
  if (driver_ && attempts_[name].capped && !r.keep_nccl_transport) {
    in.capped_nic = net_->options().nic;
  }
  GpuEnv env = BuildGpuEnv(in);
  out.env = std::move(env.env);
  out.limits.set_gpu_sharing(env.sharing);
  out.limits.set_kind(r.inference ? v1::WORKLOAD_KIND_INFERENCE : v1::WORKLOAD_KIND_TRAINING);
  if (driver_) attempts_[name].limits.set_gpu_sharing(env.sharing);
  return out;
}

absl::StatusOr<PreparedAttempt> Isolator::Prepare(const AttemptRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  return SetUpLocked(r, /*adopt=*/false);
}

absl::Status Isolator::Readopt(const AttemptRequest& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto prepared = SetUpLocked(r, /*adopt=*/true);
  return prepared.status();
}

absl::Status Isolator::Kill(uint64_t job, uint32_t attempt) {
  if (!driver_) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return driver_->KillAll(Name(job, attempt));
}

absl::Status Isolator::Release(uint64_t job, uint32_t attempt) {
  if (!driver_) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = Name(job, attempt);
  absl::Status first;
  // Most attempts end with their cgroup empty already (the keeper has left it): one read of
  // every hierarchy then, not a kill's reads and the wait's again.
  auto pids = driver_->Pids(name);
  if (!pids.ok() || !pids->empty()) {
    first = driver_->KillAll(name);
    // SIGKILL is not instant: wait (bounded) for the cgroup to empty before removing it.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      pids = driver_->Pids(name);
      if (!pids.ok() || pids->empty() || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  auto keep = [&first](absl::Status s) {
    if (!s.ok() && first.ok()) first = s;
  };
  keep(driver_->Remove(name));
  auto it = attempts_.find(name);
  bool inference = it != attempts_.end() && it->second.inference;
  if (net_) keep(net_->Remove(name));
  planner_.Remove(name);
  attempts_.erase(name);
  if (inference) {  // widen training, and the agent's own threads, back
    keep(ApplyTrainingLocked(""));
    keep(ApplySelfLocked());
  }
  return first;
}

absl::StatusOr<v1::IsolationStats> Isolator::Stats(uint64_t job, uint32_t attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string name = Name(job, attempt);
  if (!driver_ || !attempts_.count(name)) return absl::NotFoundError("no cgroup for " + name);
  auto st = driver_->Stats(name);
  if (!st.ok()) return st.status();
  v1::IsolationStats out;
  out.set_cpu_usage_us(st->cpu_usage_us);
  out.set_nr_periods(st->nr_periods);
  out.set_nr_throttled(st->nr_throttled);
  out.set_throttled_us(st->throttled_us);
  out.set_memory_current_bytes(st->memory_current_bytes);
  out.set_memory_peak_bytes(st->memory_peak_bytes);
  if (net_ && attempts_[name].capped) {  // a class of its own (not the shared inference one)
    if (auto cls = net_->Stats(name); cls.ok()) {
      out.set_net_bytes(cls->bytes);
      out.set_net_overlimits(cls->overlimits);
      out.set_net_drops(cls->dropped);
    }
  }
  return out;
}

v1::IsolationLimits Isolator::Limits(uint64_t job, uint32_t attempt) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = attempts_.find(Name(job, attempt));
  return it == attempts_.end() ? v1::IsolationLimits() : it->second.limits;
}

absl::StatusOr<std::vector<pid_t>> Isolator::Pids(uint64_t job, uint32_t attempt) {
  if (!driver_) return std::vector<pid_t>{};
  std::lock_guard<std::mutex> lock(mu_);
  return driver_->Pids(Name(job, attempt));
}

absl::StatusOr<std::vector<LiveLeftover>> Isolator::Recover() {
  std::vector<LiveLeftover> live;
  if (!driver_) return live;
  std::lock_guard<std::mutex> lock(mu_);
  auto names = driver_->List();
  if (!names.ok()) return names.status();
  std::set<std::string> live_names;
  for (const auto& name : *names) {
    LiveLeftover l;
    if (!ParseName(name, &l.job_id, &l.attempt)) continue;
    auto pids = driver_->Pids(name);
    if (!pids.ok()) return pids.status();
    if (pids->empty()) {
      spdlog::info("removing the cgroup of ended attempt {}", name);
      if (auto s = driver_->Remove(name); !s.ok()) return s;
      continue;
    }
    l.pids = *pids;
    live_names.insert(name);
    live.push_back(std::move(l));
  }
  if (net_) {
    if (auto s = net_->Recover(live_names); !s.ok()) return s;
  }
  return live;
}

v1::NodeIsolation Isolator::Describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  v1::NodeIsolation d;
  d.set_mode(driver_ ? driver_->mode() : "none");
  if (net_) {
    d.set_nic(net_->options().nic);
    d.set_nic_mbps(net_->options().nic_mbps);
    d.set_guaranteed_mbps(net_->GuaranteedMbps());
    d.set_default_ceil_percent(net_->options().default_ceil_percent);
  }
  d.set_exclusive_cpus(planner_.ExclusiveCpus());
  return d;
}

}  // namespace baton
