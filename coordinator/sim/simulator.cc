#include "coordinator/sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "coordinator/scheduler/plan.h"

namespace baton::sim {
namespace {

constexpr Time kNever = std::numeric_limits<Time>::max();
// reasons.cc's suffix when a pass ran out of preemption searches: the coordinator's next
// pass (its transitions kick one) takes up the rest.
constexpr std::string_view kDeferred = "preemption deferred: this pass spent its search budget";

bool Deferred(const sched::Decisions& d) {
  for (const sched::JobOutcome& o : d.outcomes) {
    if ((o.outcome == sched::Outcome::kWaitForCapacity || o.outcome == sched::Outcome::kReserved) &&
        std::string_view(o.reason).ends_with(kDeferred)) {
      return true;
    }
  }
  return false;
}

uint32_t GpuSlots(const std::vector<sched::NodeInfo>& nodes) {
  uint32_t n = 0;
  for (const sched::NodeInfo& node : nodes) {
    std::set<std::string> parents;
    for (const sched::GpuInfo& g : node.gpus) {
      if (!g.parent_uuid.empty()) parents.insert(g.parent_uuid);
    }
    for (const sched::GpuInfo& g : node.gpus) n += parents.count(g.uuid) ? 0 : 1;
  }
  return n;
}

}  // namespace

Simulator::Simulator(std::vector<sched::NodeInfo> nodes, sched::Policy policy, SimOptions options,
                     Time start)
    : policy_(std::move(policy)),
      options_(options),
      start_(start),
      now_(start),
      ledger_(policy_.fair_share_half_life_s * 1000, start) {
  view_.nodes = std::move(nodes);
  total_gpus_ = GpuSlots(view_.nodes);
  if (options_.sample_interval_ms > 0) Push(start_, Kind::kSample, 0);
}

void Simulator::Submit(sched::PendingJob job, SimWork work) {
  job.submitted = std::max(job.submitted, now_);
  SimJob& rec = jobs_[job.id];
  rec.tenant = job.tenant;
  rec.priority_class = job.priority_class;
  rec.gpus = job.request.nodes * job.request.gpus_per_node;
  rec.gpu_share_percent = job.request.gpu_share_percent;
  rec.nodes = job.request.nodes;
  rec.submitted = job.submitted;
  Live& live = live_[job.id];
  live.work = work;
  const sched::PriorityClass* cls = policy_.Find(job.priority_class);
  live.class_value = cls ? cls->value : std::numeric_limits<int32_t>::min();
  live.spec = std::move(job);
  ++to_submit_;
  Push(live.spec.submitted, Kind::kSubmit, live.spec.id);
}

void Simulator::Submit(sched::PendingJob job, Time work_ms) {
  job.submitted = now_;
  Submit(std::move(job), SimWork{work_ms, options_.checkpoint_interval_ms, 0, 0});
}

bool Simulator::Idle() const {
  return to_submit_ == 0 && view_.running.empty() && view_.pending.empty();
}

void Simulator::RunUntil(Time t) { Loop(t, /*stop_when_idle=*/false); }

void Simulator::RunToCompletion(Time limit) { Loop(limit, /*stop_when_idle=*/true); }

void Simulator::Step(Time step_ms) {
  RunUntil(now_ + step_ms);
  if (last_pass_ != now_) Pass();
}

// Nothing runs, nothing is to come, and no cooldown ends: the jobs still waiting wait
// for good (a gang its quota can never gather, say); passes would change nothing.
bool Simulator::Stuck() const {
  if (to_submit_ > 0 || !view_.running.empty()) return false;
  return std::none_of(view_.pending.begin(), view_.pending.end(),
                      [&](const sched::PendingJob& j) { return j.cooldown_until > now_; });
}

void Simulator::Loop(Time until, bool stop_when_idle) {
  while (!(stop_when_idle && (Idle() || (Stuck() && last_pass_ == now_)))) {
    Time te = events_.empty() ? kNever : events_.top().t;
    Time tp = pass_wanted_ ? pass_at_ : kNever;
    if (!view_.pending.empty()) {
      tp = std::min(tp, std::max(last_pass_, start_) + options_.idle_pass_interval_ms);
    }
    if (std::min(te, tp) > until) break;
    if (te <= tp) {
      Event e = events_.top();
      events_.pop();
      AdvanceClock(e.t);
      Handle(e);
    } else {
      AdvanceClock(tp);
      Pass();
    }
  }
  if (!stop_when_idle) AdvanceClock(until);
}

void Simulator::Push(Time t, Kind kind, JobId job, uint32_t attempt) {
  events_.push(Event{t, kind, seq_++, job, attempt});
}

void Simulator::Want(Time at) {
  if (last_pass_ >= 0) at = std::max(at, last_pass_ + options_.min_pass_interval_ms);
  if (!pass_wanted_ || at < pass_at_) pass_at_ = at;
  pass_wanted_ = true;
}

// GPU time is charged per tenant and class for what was held since the last change.
void Simulator::AdvanceClock(Time t) {
  if (t <= now_) return;
  double dt = static_cast<double>(t - now_);
  for (const auto& [tenant, gpus] : held_tenant_) gpu_ms_[tenant] += gpus * dt;
  for (const auto& [cls, gpus] : held_class_) class_gpu_ms_[cls] += gpus * dt;
  now_ = t;
}

void Simulator::ResetGpuMs() {
  gpu_ms_.clear();
  class_gpu_ms_.clear();
}

void Simulator::Handle(const Event& e) {
  switch (e.kind) {
    case Kind::kSubmit: {
      --to_submit_;
      Enqueue(live_.at(e.job).spec);
      Want(now_);
      break;
    }
    case Kind::kExit: {
      auto it = live_.find(e.job);
      if (it == live_.end() || !it->second.running || it->second.attempt != e.attempt) break;
      Exit(e.job, /*finished=*/now_ >= it->second.finish_at);
      break;
    }
    case Kind::kWake:  // a cooldown ended
      if (!view_.pending.empty()) Want(now_);
      break;
    case Kind::kMinRuntime: {  // the gang may be evicted from now on
      auto it = live_.find(e.job);
      if (it != live_.end() && it->second.running && it->second.attempt == e.attempt &&
          it->second.class_value <= waiting_class_) {
        Want(now_);
      }
      break;
    }
    case Kind::kSample:
      Sample();
      if (!Idle()) Push(now_ + options_.sample_interval_ms, Kind::kSample, 0);
      break;
  }
}

// The pending list stays in (submitted, id) order, as the coordinator hands its queue over:
// Plan's queue order is then a bucket sort.
void Simulator::Enqueue(const sched::PendingJob& job) {
  auto key = [](const sched::PendingJob& j) { return std::tie(j.submitted, j.id); };
  if (view_.pending.empty() || key(view_.pending.back()) < key(job)) {
    view_.pending.push_back(job);
    return;
  }
  auto at = std::lower_bound(
      view_.pending.begin(), view_.pending.end(), job,
      [&](const sched::PendingJob& a, const sched::PendingJob& b) { return key(a) < key(b); });
  view_.pending.insert(at, job);
}

Time Simulator::Period(const Live& live) const {
  return static_cast<Time>(
             std::ceil(static_cast<double>(live.work.checkpoint_interval_ms) * live.slow)) +
         live.work.checkpoint_cost_ms;
}

uint32_t Simulator::ExtraLeaves(const sched::Placement& p) const {
  if (options_.nodes_per_leaf == 0) return 0;
  std::set<std::string> leaves;
  for (const sched::NodePlacement& np : p.nodes) {
    const sched::NodeInfo& n = view_.nodes[np.node];
    auto it = n.labels.find("topology.baton.io/leaf");
    leaves.insert(it == n.labels.end() ? "\1" + n.name : it->second);
  }
  auto least = static_cast<uint32_t>((p.nodes.size() + options_.nodes_per_leaf - 1) /
                                     options_.nodes_per_leaf);
  return leaves.size() > least ? static_cast<uint32_t>(leaves.size()) - least : 0;
}

uint64_t Simulator::CheckpointsBy(const Live& live, Time t) const {
  const SimWork& w = live.work;
  Time left = Remaining(live);
  if (w.checkpoint_interval_ms <= 0 || t < live.progress_start || left <= 0) return 0;
  uint64_t k = static_cast<uint64_t>((t - live.progress_start) / Period(live));
  uint64_t most = static_cast<uint64_t>((left - 1) / w.checkpoint_interval_ms);
  return std::min(k, most);
}

Time Simulator::ProgressBy(const Live& live, Time t) const {
  const SimWork& w = live.work;
  uint64_t k = CheckpointsBy(live, t);
  auto since = static_cast<Time>(
      static_cast<double>(t - live.progress_start - static_cast<Time>(k) * w.checkpoint_cost_ms) /
      live.slow);
  return std::clamp<Time>(since, 0, Remaining(live));
}

void Simulator::Hold(const Live& live, int sign) {
  ledger_.Advance(now_, held_tenant_);  // charges what was held until now
  const double d = sign * live.gpus;
  auto add = [d](std::map<std::string, double>& held, const std::string& key) {
    double& v = held[key];
    v += d;
    if (v < 1e-9) held.erase(key);  // sums of hundredths: gone once they cancel
  };
  add(held_tenant_, live.spec.tenant);
  add(held_class_, live.spec.priority_class);
  busy_gpus_ = std::max(0.0, busy_gpus_ + d);
}

void Simulator::Pass() {
  pass_wanted_ = false;
  last_pass_ = now_;
  ++passes_;
  // Without a pending job that may start, Plan places, evicts and reserves nothing (every
  // eviction is for a pending preemptor): the pass is counted, its work skipped.
  if (std::none_of(view_.pending.begin(), view_.pending.end(),
                   [&](const sched::PendingJob& j) { return j.cooldown_until <= now_; })) {
    waiting_class_ = std::numeric_limits<int32_t>::min();
    return;
  }
  ++plans_;
  ledger_.Advance(now_, held_tenant_);
  view_.usage = ledger_.Snapshot();
  for (sched::RunningGang& g : view_.running) {
    const Live& l = live_.at(g.id);
    if (l.evicted_at >= 0) continue;
    uint64_t k = CheckpointsBy(l, now_);
    g.last_checkpoint = k == 0 ? 0 : l.progress_start + static_cast<Time>(k) * Period(l);
  }
  auto t0 = std::chrono::steady_clock::now();
  sched::Decisions d = sched::Plan(view_, policy_, now_);
  plan_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  plan_view_jobs_ += view_.running.size() + view_.pending.size();
  if (observer_) observer_(view_, now_, d);
  Apply(d);
}

void Simulator::Apply(const sched::Decisions& d) {
  std::unordered_set<JobId> gone;
  for (const sched::Placement& p : d.placements) {
    Start(p);
    gone.insert(p.job);
  }
  waiting_class_ = std::numeric_limits<int32_t>::min();
  for (const sched::JobOutcome& o : d.outcomes) {
    if (o.outcome == sched::Outcome::kWaitForCapacity ||
        o.outcome == sched::Outcome::kWaitForQuota || o.outcome == sched::Outcome::kReserved) {
      waiting_class_ = std::max(waiting_class_, live_.at(o.job).class_value);
    }
    if (o.outcome != sched::Outcome::kInfeasible) continue;
    SimJob& rec = jobs_[o.job];
    rec.infeasible = true;
    rec.infeasible_reason = o.reason.str();
    gone.insert(o.job);
  }
  for (const sched::Eviction& e : d.evictions) Evict(e);
  std::map<JobId, std::vector<std::string>> held;
  for (const sched::Reservation& r : d.reservations) {
    if (r.kind != sched::Reservation::Kind::kPreemption) continue;
    for (uint32_t n : r.nodes) held[r.job].push_back(view_.nodes[n].name);
  }
  if (!gone.empty() || !held.empty() || !reserved_.empty()) {
    reserved_.clear();
    std::erase_if(view_.pending, [&](sched::PendingJob& j) {
      if (gone.count(j.id)) return true;
      auto it = held.find(j.id);
      j.reserved_nodes = it == held.end() ? std::vector<std::string>{} : std::move(it->second);
      if (!j.reserved_nodes.empty()) reserved_.push_back(j.id);
      return false;
    });
  }
  if (!d.evictions.empty() || Deferred(d)) Want(now_ + options_.min_pass_interval_ms);
}

void Simulator::Start(const sched::Placement& p) {
  Live& l = live_.at(p.job);
  sched::RunningGang g;
  g.id = p.job;
  g.tenant = l.spec.tenant;
  g.priority_class = l.spec.priority_class;
  g.nodes = sched::ToHeld(view_, p);
  g.started = now_;
  g.evictions = l.spec.evictions;
  g.user = l.spec.user;
  l.gpus = 0;
  for (const sched::HeldNode& h : g.nodes) l.gpus += sched::HeldGpus(h);
  ++l.attempt;
  l.running = true;
  l.evicted_at = -1;
  l.attempt_start = now_;
  l.progress_start = now_ + (l.attempt > 1 ? l.work.restart_cost_ms : 0);
  uint32_t extra = ExtraLeaves(p);
  l.slow = 1 + options_.topology_slowdown * extra;
  Time left = Remaining(l);
  Time stalls = 0;
  if (l.work.checkpoint_interval_ms > 0 && left > 0) {
    stalls = (left - 1) / l.work.checkpoint_interval_ms * l.work.checkpoint_cost_ms;
  }
  l.finish_at =
      l.progress_start +
      static_cast<Time>(std::ceil(static_cast<double>(std::max<Time>(left, 0)) * l.slow)) + stalls;
  Push(l.finish_at, Kind::kExit, p.job, l.attempt);
  const sched::PriorityClass* cls = policy_.Find(l.spec.priority_class);
  if (cls && cls->preemptible && cls->min_runtime_s > 0) {
    Push(now_ + cls->min_runtime_s * 1000, Kind::kMinRuntime, p.job, l.attempt);
  }
  Hold(l, +1);
  running_index_[g.id] = view_.running.size();
  view_.running.push_back(std::move(g));
  SimJob& rec = jobs_[p.job];
  ++rec.attempts;
  if (extra > 0) ++rec.spread_attempts;
  if (rec.first_start < 0) rec.first_start = now_;
}

void Simulator::Evict(const sched::Eviction& e) {
  auto idx = running_index_.find(e.victim);
  if (idx == running_index_.end()) return;
  sched::RunningGang& g = view_.running[idx->second];
  if (g.evicting) return;
  g.evicting = true;
  g.evicting_for = e.preemptor;
  Live& l = live_.at(e.victim);
  l.evicted_at = now_;
  l.cooldown_ms = e.cooldown_ms;
  ++evictions_;
  ++jobs_[e.victim].evictions;
  Time leave = now_ + options_.grace_ms;
  if (l.finish_at > leave) Push(leave, Kind::kExit, e.victim, l.attempt);
}

// The gang is gone: finished, or evicted (its job waits out the cooldown, then queues
// again from its last checkpoint).
void Simulator::Exit(JobId id, bool finished) {
  size_t i = running_index_.at(id);
  running_index_.erase(id);
  if (i + 1 != view_.running.size()) {
    view_.running[i] = std::move(view_.running.back());
    running_index_[view_.running[i].id] = i;
  }
  view_.running.pop_back();
  Live& l = live_.at(id);
  Hold(l, -1);
  l.running = false;
  SimJob& rec = jobs_[id];
  Want(now_);
  if (finished) {
    rec.finished = true;
    rec.finished_at = now_;
    live_.erase(id);
    return;
  }
  Time kept_until = l.attempt_start;
  if (options_.save_on_eviction) {
    l.committed_ms += ProgressBy(l, l.evicted_at);
    kept_until = l.evicted_at;
  } else if (uint64_t k = CheckpointsBy(l, l.evicted_at); k > 0) {
    l.committed_ms += static_cast<Time>(k) * l.work.checkpoint_interval_ms;
    kept_until = l.progress_start + static_cast<Time>(k) * Period(l);
  }
  rec.lost_gpu_ms += l.gpus * static_cast<double>(now_ - kept_until);
  l.spec.evictions = rec.evictions;
  l.spec.cooldown_until = now_ + l.cooldown_ms;
  l.spec.reserved_nodes.clear();
  Enqueue(l.spec);
  if (l.cooldown_ms > 0) Push(l.spec.cooldown_until, Kind::kWake, id);
}

void Simulator::Sample() {
  SimSample s;
  s.t = now_;
  s.busy_gpus = busy_gpus_;
  s.running = static_cast<uint32_t>(view_.running.size());
  s.pending = static_cast<uint32_t>(view_.pending.size());
  s.tenant_gpus = held_tenant_;
  Stranded(s);
  samples_.push_back(std::move(s));
}

// What is left of each MPS pool, and whether a waiting share fits it: a pool's free units
// are stranded while shares wait and none of them fits what it has left (units, memory,
// its one user). With no share waiting nothing is stranded: the capacity is idle.
void Simulator::Stranded(SimSample& s) const {
  struct Left {
    uint32_t units = 100;
    uint64_t mem = 0;
    std::string user;
  };
  std::unordered_map<std::string, Left> pools;
  for (const sched::NodeInfo& n : view_.nodes) {
    for (const sched::GpuInfo& g : n.gpus) {
      if (g.mps) pools[g.uuid].mem = g.memory_bytes;
    }
  }
  s.pool_gpus = static_cast<double>(pools.size());
  for (const sched::RunningGang& g : view_.running) {
    for (const sched::HeldNode& h : g.nodes) {
      if (h.gpu_share_percent == 0 || h.gpu_uuids.size() != 1) continue;
      auto it = pools.find(h.gpu_uuids[0]);
      if (it == pools.end()) continue;
      it->second.units -= std::min(it->second.units, h.gpu_share_percent);
      it->second.mem -= std::min(it->second.mem, h.gpu_memory_bytes);
      it->second.user = g.user;
    }
  }
  std::vector<const sched::PendingJob*> waiting;
  for (const sched::PendingJob& j : view_.pending) {
    if (j.request.gpu_share_percent > 0 && j.cooldown_until <= now_) waiting.push_back(&j);
  }
  if (waiting.empty()) return;
  for (const auto& pool : pools) {
    const Left& left = pool.second;  // not a structured binding: clang 14's lambdas refuse one
    if (left.units == 0) continue;
    bool fits = std::any_of(waiting.begin(), waiting.end(), [&](const sched::PendingJob* j) {
      return j->request.gpu_share_percent <= left.units &&
             j->request.gpu_memory_bytes <= left.mem && (left.units == 100 || left.user == j->user);
    });
    if (!fits) s.stranded_gpus += left.units / 100.0;
  }
}

}  // namespace baton::sim
