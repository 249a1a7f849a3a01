#include "tests/coordinator/scheduler_sim.h"

#include <algorithm>
#include <set>

#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/plan.h"
#include "tests/coordinator/scheduler_invariants.h"

namespace baton::sched::testing {

Simulator::Simulator(std::vector<NodeInfo> nodes, Policy policy, SimOptions options)
    : policy_(std::move(policy)),
      options_(options),
      ledger_(policy_.fair_share_half_life_s * 1000, 0) {
  view_.nodes = std::move(nodes);
}

void Simulator::Submit(PendingJob job, Time work_ms) {
  job.submitted = now_;
  progress_[job.id].work_ms = work_ms;
  jobs_[job.id].tenant = job.tenant;
  specs_[job.id] = job;
  view_.pending.push_back(std::move(job));
}

void Simulator::RunUntil(Time t) {
  while (now_ < t) Step();
}

void Simulator::Step() {
  std::map<std::string, uint32_t> held = RunningGpusByTenant(view_);
  now_ += options_.step_ms;
  for (const auto& [tenant, gpus] : held) {
    gpu_ms_[tenant] += static_cast<double>(gpus) * static_cast<double>(options_.step_ms);
  }
  ledger_.Advance(now_, held);
  view_.usage = ledger_.Snapshot();
  Advance();
  Decisions d = Plan(view_, policy_, now_);
  for (const std::string& p : CheckDecisions(view_, policy_, now_, d)) {
    problems_.push_back("t=" + std::to_string(now_ / 1000) + "s: " + p);
  }
  Apply(d);
}

// Running gangs progress and checkpoint; finished and departed gangs leave.
void Simulator::Advance() {
  for (size_t i = view_.running.size(); i-- > 0;) {
    RunningGang& g = view_.running[i];
    Progress& p = progress_[g.id];
    if (g.evicting && now_ >= p.leaves_at) {
      Exit(i);
      continue;
    }
    p.attempt_ms += options_.step_ms;
    if (p.attempt_ms - p.saved_at_ms >= options_.checkpoint_every_ms) {
      p.committed_ms += p.attempt_ms - p.saved_at_ms;
      p.saved_at_ms = p.attempt_ms;
      g.last_checkpoint = now_;
    }
    if (p.committed_ms + (p.attempt_ms - p.saved_at_ms) >= p.work_ms) {
      jobs_[g.id].finished = true;
      jobs_[g.id].finished_at = now_;
      view_.running.erase(view_.running.begin() + static_cast<ptrdiff_t>(i));
    }
  }
}

// An evicted gang is gone: its job queues again after its cooldown, from its checkpoint.
void Simulator::Exit(size_t i) {
  RunningGang g = view_.running[i];
  view_.running.erase(view_.running.begin() + static_cast<ptrdiff_t>(i));
  Progress& p = progress_[g.id];
  if (options_.save_on_eviction) p.committed_ms += p.attempt_ms - p.saved_at_ms;
  p.attempt_ms = p.saved_at_ms = 0;
  PendingJob job = specs_[g.id];
  job.evictions = ++jobs_[g.id].evictions;
  job.cooldown_until = now_ + p.cooldown_ms;
  specs_[g.id] = job;
  view_.pending.push_back(job);
}

void Simulator::Apply(const Decisions& d) {
  std::set<JobId> started;
  for (const Placement& pl : d.placements) {
    const PendingJob& job = specs_[pl.job];
    RunningGang g;
    g.id = job.id;
    g.tenant = job.tenant;
    g.priority_class = job.priority_class;
    g.nodes = ToHeld(view_, pl);
    g.started = now_;
    g.evictions = job.evictions;
    view_.running.push_back(std::move(g));
    started.insert(pl.job);
  }
  std::erase_if(view_.pending, [&](const PendingJob& j) { return started.count(j.id) > 0; });
  for (const Eviction& e : d.evictions) {
    for (RunningGang& g : view_.running) {
      if (g.id != e.victim) continue;
      g.evicting = true;
      g.evicting_for = e.preemptor;
      progress_[g.id].leaves_at = now_ + options_.grace_ms;
      progress_[g.id].cooldown_ms = e.cooldown_ms;
      ++evictions_;
    }
  }
  for (PendingJob& j : view_.pending) {
    j.reserved_nodes.clear();
    for (const Reservation& r : d.reservations) {
      if (r.job != j.id || r.kind != Reservation::Kind::kPreemption) continue;
      for (uint32_t n : r.nodes) j.reserved_nodes.push_back(view_.nodes[n].name);
    }
  }
}

}  // namespace baton::sched::testing
