// JobManager: dependencies between jobs (issue 49; dependencies.h says what each end
// means). A dependent is checked at submit against the jobs it names; from then on it is
// settled in the commit that ends a job it waits for (CommitLocked calls
// SettleDependentsLocked), so that the end and what it means for those waiting are one
// atomic write: a dependency once met stays met across restarts (Job.after_met), and one
// that can never be met ends its dependent at once, never leaving it waiting.

#include "common/status.h"
#include "coordinator/arrays.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_state.h"

namespace baton {
namespace {

// An array's dependencies as a job's, for the deps:: functions (which read a Job).
v1::Job DependencyView(const v1::JobArray& rec) {
  v1::Job j;
  j.set_id(rec.id());
  *j.mutable_spec()->mutable_after() = rec.spec().after();
  *j.mutable_after_met() = rec.after_met();
  return j;
}

// Each unmet dependency `i` of `spec` (of the job or array `dependent`): indexed while
// `state_of(i)` — the state of what it names, nullopt while that has not ended — leaves it
// waiting, else `settle(i, state)`, which returns true once the dependent has ended.
template <typename StateOf, typename Settle>
void SettleOrWait(const v1::JobSpec& spec, const std::vector<int>& unmet, uint64_t dependent,
                  deps::DependentsIndex& index, StateOf state_of, Settle settle) {
  for (int i : unmet) {
    const v1::JobDependency& d = spec.after(i);
    const std::optional<v1::JobState> state = state_of(i);
    if (!state || deps::Judge(d.kind(), *state) == deps::Verdict::kWaiting) {
      index.Add(d.job(), dependent);
    } else if (settle(i, *state)) {
      return;
    }
  }
}

}  // namespace

JobManager::FarJobs JobManager::FetchDependencies(const v1::JobSpec& spec) const {
  FarJobs far;
  for (const v1::JobDependency& d : spec.after()) {
    if (!far.contains(d.job())) far.emplace(d.job(), Lookup(d.job(), /*with_events=*/false));
  }
  return far;
}

absl::StatusOr<std::vector<v1::JobState>> JobManager::DependencyStatesLocked(
    const v1::JobSpec& spec, const FarJobs& far) const {
  std::vector<v1::JobState> states;
  for (const v1::JobDependency& d : spec.after()) {
    const v1::Job* target = nullptr;
    if (auto a = arrays_.find(d.job()); a != arrays_.end()) {  // every task of it
      const PriorityClass* cls = policy_.policy.Find(a->second.rec.spec().priority_class());
      if (cls != nullptr && cls->service) {
        return absl::InvalidArgumentError("after " + DependencyName(d) + ": array " +
                                          std::to_string(d.job()) +
                                          " is of a service class: services do not end");
      }
      states.push_back(arrays::EndState(a->second.rec));
      continue;
    }
    std::optional<v1::Job> unmade;  // a task of an array that is not a job yet
    if (const JobEntry* e = jobs_.Find(d.job())) {
      target = &e->job;
    } else if ((unmade = UnmadeTaskLocked(d.job()))) {
      target = &*unmade;
    } else if (const FinishedJobs::Entry* f = finished_.Find(d.job())) {
      target = &f->job;
    } else {
      auto it = far.find(d.job());
      if (it == far.end() || !it->second.ok()) {
        const absl::Status s =
            it == far.end() ? absl::NotFoundError("not looked up") : it->second.status();
        return absl::Status(s.code(),
                            "after " + DependencyName(d) + ": " + std::string(s.message()));
      }
      // Read before the lock while in memory, gone since: it ended in the meantime and
      // newer ends pushed it out of finished_. Its record is what it was then.
      if (!IsTerminal(it->second->state())) {
        return absl::UnavailableError("after " + DependencyName(d) + ": job " +
                                      std::to_string(d.job()) + " ended just now; submit again");
      }
      target = &*it->second;
    }
    const PriorityClass* cls = policy_.policy.Find(target->spec().priority_class());
    BATON_RETURN_IF_ERROR(deps::CheckTarget(d, *target, cls != nullptr && cls->service));
    states.push_back(target->state());
  }
  return states;
}

void JobManager::StartDependenciesLocked(JobEntry& e, const std::vector<v1::JobState>& states,
                                         Txn& txn) {
  SettleOrWait(
      e.job.spec(), deps::Unmet(e.job), e.job.id(), dependents_,
      [&](int i) { return std::optional<v1::JobState>(states[i]); },
      [&](int i, v1::JobState state) { return SettleLocked(e, i, state, txn); });
}

bool JobManager::SettleLocked(JobEntry& e, int index, v1::JobState state, Txn& txn) {
  const v1::JobDependency& d = e.job.spec().after(index);
  const deps::Verdict v = deps::Judge(d.kind(), state);
  if (v == deps::Verdict::kWaiting) return false;
  if (v == deps::Verdict::kMet) {
    e.job.add_after_met(static_cast<uint32_t>(index));
    NoteEvent(e, e.job.state(), deps::MetText(d, state), "scheduler", txn, "dependency_met");
    if (deps::Unmet(e.job).empty()) Kick();
    return false;
  }
  Transition(e, v1::JOB_STATE_CANCELLED, deps::NeverText(d, state), "scheduler", txn,
             "dependency_never_satisfied");
  e.job.set_exit_code(0);
  return true;
}

void JobManager::SettleDependentsLocked(Txn& txn) {
  SettleEndedLocked(std::vector<uint64_t>(txn.touched.begin(), txn.touched.end()), txn);
}

void JobManager::SettleEndedLocked(std::vector<uint64_t> ended, Txn& txn) {
  // Ends cascade: a dependent cancelled here may be waited for in turn.
  while (!ended.empty()) {
    const uint64_t id = ended.back();
    ended.pop_back();
    if (!dependents_.Waited(id)) continue;
    const JobEntry* e = jobs_.Find(id);
    if (e == nullptr || !IsTerminal(e->job.state())) continue;
    SettleOnLocked(id, e->job.state(), txn, ended);
  }
}

void JobManager::SettleOnLocked(uint64_t id, v1::JobState state, Txn& txn,
                                std::vector<uint64_t>& ended) {
  for (uint64_t dependent : dependents_.Take(id)) {
    if (auto a = arrays_.find(dependent); a != arrays_.end()) {  // an array waiting whole
      if (!a->second.rec.cancelled_by().empty()) continue;       // cancelled meanwhile
      for (int i : deps::Unmet(DependencyView(a->second.rec))) {
        if (a->second.rec.spec().after(i).job() == id &&
            SettleArrayLocked(a->second, i, state, txn)) {
          break;  // cancelled: its own dependents were settled as it ended
        }
      }
      continue;
    }
    JobEntry* e = jobs_.Find(dependent);
    if (e == nullptr || IsTerminal(e->job.state())) continue;  // cancelled meanwhile
    for (int i : deps::Unmet(e->job)) {
      if (e->job.spec().after(i).job() != id) continue;
      if (SettleLocked(*e, i, state, txn)) {
        ended.push_back(dependent);
        break;
      }
    }
  }
}

absl::Status JobManager::ResolveArrayDependencies(v1::JobSpec* spec) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (v1::JobDependency& d : *spec->mutable_after()) {
    if (!d.has_task()) continue;
    auto a = arrays_.find(d.job());
    if (a == arrays_.end()) {
      return absl::NotFoundError("after " + DependencyName(d) + ": array " +
                                 std::to_string(d.job()) + " not found");
    }
    std::optional<uint32_t> position = arrays::PositionOf(a->second.rec.spec().array(), d.task());
    if (!position) {
      return absl::NotFoundError(
          "after " + DependencyName(d) + ": array " + std::to_string(d.job()) + " has no task " +
          std::to_string(d.task()) + " (its tasks: " + arrays::Label(a->second.rec) + ")");
    }
    d.set_job(arrays::TaskJobId(d.job(), *position));
    d.clear_task();
  }
  return absl::OkStatus();
}

std::optional<v1::JobState> JobManager::EndedStateLocked(uint64_t on) const {
  if (auto a = arrays_.find(on); a != arrays_.end()) {  // a whole array
    if (a->second.rec.finished_ms() == 0) return std::nullopt;
    return arrays::EndState(a->second.rec);
  }
  if (const JobEntry* target = jobs_.Find(on)) {
    if (!IsTerminal(target->job.state())) return std::nullopt;
    return target->job.state();
  }
  // Not in memory: it ended, and the commit that stored its end settled its dependents
  // too — unless the record predates that. Read it (startup: nothing else runs yet).
  absl::StatusOr<v1::Job> target = store_->ReadJob(on, /*with_events=*/false);
  return target.ok() && IsTerminal(target->state()) ? target->state() : v1::JOB_STATE_UNSPECIFIED;
}

void JobManager::RecoverDependenciesLocked(Txn& txn) {
  auto ended_state = [this](const v1::JobSpec& spec) {
    return [this, &spec](int i) { return EndedStateLocked(spec.after(i).job()); };
  };
  std::vector<uint64_t> waiting;
  for (const auto& [id, e] : jobs_.all()) {
    if (!IsTerminal(e.job.state()) && e.job.spec().after_size() > 0) waiting.push_back(id);
  }
  for (uint64_t id : waiting) {
    JobEntry& e = jobs_.at(id);
    SettleOrWait(e.job.spec(), deps::Unmet(e.job), id, dependents_, ended_state(e.job.spec()),
                 [&](int i, v1::JobState state) { return SettleLocked(e, i, state, txn); });
  }
  std::vector<uint64_t> arrays_waiting;
  for (const auto& [id, a] : arrays_) {
    if (a.rec.finished_ms() == 0 && a.rec.cancelled_by().empty() &&
        a.rec.after_met_size() < a.rec.spec().after_size()) {
      arrays_waiting.push_back(id);
    }
  }
  for (uint64_t id : arrays_waiting) {
    ArrayState& a = arrays_.at(id);
    SettleOrWait(a.rec.spec(), deps::Unmet(DependencyView(a.rec)), id, dependents_,
                 ended_state(a.rec.spec()),
                 [&](int i, v1::JobState state) { return SettleArrayLocked(a, i, state, txn); });
  }
}

void JobManager::StartArrayDependenciesLocked(ArrayState& a,
                                              const std::vector<v1::JobState>& states, Txn& txn) {
  SettleOrWait(
      a.rec.spec(), deps::Unmet(DependencyView(a.rec)), a.rec.id(), dependents_,
      [&](int i) { return std::optional<v1::JobState>(states[i]); },
      [&](int i, v1::JobState state) { return SettleArrayLocked(a, i, state, txn); });
}

bool JobManager::SettleArrayLocked(ArrayState& a, int index, v1::JobState state, Txn& txn) {
  const v1::JobDependency& d = a.rec.spec().after(index);
  const deps::Verdict v = deps::Judge(d.kind(), state);
  if (v == deps::Verdict::kWaiting) return false;
  if (v == deps::Verdict::kMet) {
    a.rec.add_after_met(static_cast<uint32_t>(index));
    a.rec.set_version(a.rec.version() + 1);
    txn.batch.arrays.push_back(a.rec);
    if (deps::Unmet(DependencyView(a.rec)).empty()) Kick();  // its tasks may be made
    return false;
  }
  // Never met: the array ends CANCELLED with every task, none of which ever became a job.
  a.rec.set_message(deps::NeverText(d, state));
  Caller scheduler;
  scheduler.user = "scheduler";
  CancelArrayLocked(a, scheduler, a.rec.message(), txn);
  return true;
}

std::string JobManager::ArrayWaitTextLocked(const ArrayState& a) const {
  if (a.rec.after_met_size() >= a.rec.spec().after_size() || !a.rec.cancelled_by().empty()) {
    return "";
  }
  const v1::Job view = DependencyView(a.rec);
  return deps::WaitText(
      view, deps::Unmet(view),
      [this](uint64_t on) {
        const JobEntry* e = jobs_.Find(on);
        return e != nullptr ? e->job.state() : v1::JOB_STATE_UNSPECIFIED;
      },
      [this](uint64_t on) { return arrays_.contains(on); });
}

}  // namespace baton
