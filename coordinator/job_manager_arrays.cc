// JobManager: job arrays (issue 49; arrays.h says what an array is). An array is one
// stored record (v1::JobArray) until its tasks may start; each pass makes the next tasks
// jobs (MakeTasksLocked: up to %max_running unfinished, else in slow-start batches),
// which from then on are jobs like any other. The record counts its tasks' ends, written
// in the commit that ends each task (CountTaskEndsLocked, from CommitLocked).

#include "common/status.h"
#include "coordinator/access.h"
#include "coordinator/arrays.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_state.h"

namespace baton {

JobManager::ArrayState* JobManager::ArrayOfLocked(uint64_t job_id) {
  auto it = arrays_.upper_bound(job_id);
  if (it == arrays_.begin()) return nullptr;
  --it;
  ArrayState& a = it->second;
  return job_id <= a.rec.id() + a.rec.tasks() ? &a : nullptr;
}

const JobManager::ArrayState* JobManager::ArrayOfLocked(uint64_t job_id) const {
  return const_cast<JobManager*>(this)->ArrayOfLocked(job_id);
}

uint32_t JobManager::ArrayTasksLeftLocked(const std::string& tenant) const {
  uint32_t n = 0;  // every array not ended: its tasks still to be made and those running
  for (const auto& [id, a] : arrays_) {
    if (a.rec.finished_ms() == 0 && a.rec.spec().tenant() == tenant) {
      n += arrays::TasksLeft(a.rec);
    }
  }
  return n;
}

uint32_t JobManager::ArraysWaitingLocked(const std::string& tenant) const {
  uint32_t n = 0;
  for (uint64_t id : making_) n += arrays_.at(id).rec.spec().tenant() == tenant;
  return n;
}

absl::Status JobManager::CheckArrayLocked(const v1::JobSpec& spec) const {
  const Policy::Admission& limits = policy_.policy.admission;
  const uint32_t tasks = arrays::TaskCount(spec.array());
  const uint32_t left = ArrayTasksLeftLocked(spec.tenant());
  if (static_cast<uint64_t>(left) + tasks > limits.max_array_tasks_per_tenant) {
    return Throttled("tenant " + spec.tenant() + " has " + std::to_string(left) +
                         " array tasks not yet ended; " + std::to_string(tasks) +
                         " more would pass admission.max_array_tasks_per_tenant (" +
                         std::to_string(limits.max_array_tasks_per_tenant) + ")",
                     absl::Seconds(60));
  }
  return absl::OkStatus();
}

absl::Status JobManager::ValidateArraySpecLocked(const Caller& caller, v1::JobSpec* spec) const {
  const v1::ArraySpec a = spec->array();
  BATON_RETURN_IF_ERROR(arrays::CheckSpec(a, policy_.policy.admission.max_array_tasks));
  // Checked as its task with the longest substitution (the largest id and index): every
  // other task's name and paths are no longer, with the same characters.
  v1::JobSpec probe = arrays::TaskSpec(*spec, next_job_id_, a.last());
  BATON_RETURN_IF_ERROR(ValidateAndDefaultSpec(caller, policy_.policy, ShapeLocked(), &probe));
  // The templates stay in the array's spec; a default (the name from argv[0]) is kept.
  auto templated = [](const std::string& s) { return s.find('%') != std::string::npos; };
  if (templated(spec->name())) probe.set_name(spec->name());
  if (templated(spec->working_dir())) probe.set_working_dir(spec->working_dir());
  if (templated(spec->checkpoint_dir())) probe.set_checkpoint_dir(spec->checkpoint_dir());
  *probe.mutable_array() = a;
  *probe.mutable_after() = spec->after();  // the array's own (its tasks carry none)
  *spec = std::move(probe);
  return absl::OkStatus();
}

uint64_t JobManager::AddArrayLocked(const Caller& caller, v1::JobSpec spec, bool hold, Txn& txn) {
  const uint64_t id = next_job_id_;
  const uint32_t tasks = arrays::TaskCount(spec.array());
  next_job_id_ += 1 + tasks;  // the array's id, then one per task
  ArrayState& a = arrays_[id];
  a.rec.set_id(id);
  *a.rec.mutable_spec() = std::move(spec);
  a.rec.set_user(caller.user);
  a.rec.set_submitted_ms(clock_->NowMs());
  a.rec.set_tasks(tasks);
  a.rec.set_version(1);
  if (hold) {
    *a.rec.mutable_hold() = NewHold(caller.user, access::IsAdmin(policy_.policy.access, caller),
                                    "held at submit", clock_->NowMs());
  }
  making_.insert(id);
  txn.batch.next_job_id = next_job_id_;
  txn.batch.arrays.push_back(a.rec);
  return id;
}

void JobManager::MakeTasksLocked(Txn& txn) {
  std::vector<uint64_t> done;
  for (uint64_t id : making_) {
    ArrayState& a = arrays_.at(id);
    uint32_t waiting = 0;
    for (uint64_t t : a.unfinished) {
      const JobEntry* e = jobs_.Find(t);
      waiting += e != nullptr && WaitsInQueue(e->job.state());
    }
    const arrays::MakePlan plan =
        arrays::ToMake(a.rec, static_cast<uint32_t>(a.unfinished.size()), waiting, a.batch);
    a.batch = plan.batch;
    uint32_t n = plan.make;
    if (n == 0) continue;
    for (; n > 0; --n) {
      std::optional<uint32_t> p = arrays::NextPosition(a.rec);
      if (!p) {
        a.rec.set_made(a.rec.tasks());
        break;
      }
      MakeTaskLocked(a, *p, txn);
      a.rec.set_made(*p + 1);
    }
    if (!arrays::NextPosition(a.rec)) a.rec.set_made(a.rec.tasks());
    if (a.rec.made() >= a.rec.tasks()) done.push_back(id);
    a.rec.set_version(a.rec.version() + 1);
    txn.batch.arrays.push_back(a.rec);
  }
  for (uint64_t id : done) making_.erase(id);
}

void JobManager::MakeTaskLocked(ArrayState& a, uint32_t position, Txn& txn) {
  const uint32_t index = arrays::IndexAt(a.rec.spec().array(), position);
  v1::Job job;
  job.set_id(arrays::TaskJobId(a.rec.id(), position));
  *job.mutable_spec() = arrays::TaskSpec(a.rec.spec(), a.rec.id(), index);
  job.set_user(a.rec.user());
  job.set_submitted_ms(a.rec.submitted_ms());  // its place in line is the array's
  job.set_array_id(a.rec.id());
  job.set_array_index(index);
  JobEntry& e = jobs_.Add(std::move(job));
  a.unfinished.insert(e.job.id());
  Transition(
      e, v1::JOB_STATE_PENDING,
      "task " + arrays::TaskLabel(a.rec.id(), index) + " of an array submitted by " + a.rec.user(),
      a.rec.user(), txn);
}

void JobManager::CountTaskEndsLocked(Txn& txn) {
  std::set<uint64_t> changed;
  for (uint64_t id : txn.touched) {
    const JobEntry* e = jobs_.Find(id);
    if (e == nullptr || e->job.array_id() == 0 || !IsTerminal(e->job.state())) continue;
    auto it = arrays_.find(e->job.array_id());
    if (it == arrays_.end() || it->second.unfinished.erase(id) == 0) continue;
    v1::JobArray& rec = it->second.rec;
    switch (e->job.state()) {
      case v1::JOB_STATE_SUCCEEDED:
        rec.set_succeeded(rec.succeeded() + 1);
        break;
      case v1::JOB_STATE_FAILED:
        rec.set_failed(rec.failed() + 1);
        break;
      default:
        rec.set_cancelled(rec.cancelled() + 1);
    }
    changed.insert(rec.id());
  }
  for (uint64_t id : changed) {
    ArrayState& a = arrays_.at(id);
    if (arrays::TasksLeft(a.rec) == 0 && a.rec.finished_ms() == 0) ArrayEndedLocked(a, txn);
    a.rec.set_version(a.rec.version() + 1);
    txn.batch.arrays.push_back(a.rec);
    if (making_.contains(id)) Kick();  // room for the next tasks
  }
}

void JobManager::RecoverArraysLocked(std::vector<v1::JobArray> arrays) {
  for (auto& rec : arrays) {
    const uint64_t id = rec.id();
    ArrayState& a = arrays_[id];
    a.rec = std::move(rec);
    if (a.rec.made() < a.rec.tasks() && a.rec.cancelled_by().empty()) making_.insert(id);
  }
  for (const auto& [id, e] : jobs_.all()) {
    if (e.job.array_id() == 0 || IsTerminal(e.job.state())) continue;
    auto it = arrays_.find(e.job.array_id());
    if (it != arrays_.end()) it->second.unfinished.insert(id);
  }
}

std::optional<v1::Job> JobManager::UnmadeTaskLocked(uint64_t job_id) const {
  const ArrayState* a = ArrayOfLocked(job_id);
  if (a == nullptr || job_id == a->rec.id()) return std::nullopt;
  const uint32_t position = static_cast<uint32_t>(job_id - a->rec.id() - 1);
  const auto& skipped = a->rec.skipped();
  const bool was_skipped = std::find(skipped.begin(), skipped.end(), position) != skipped.end();
  if (position < a->rec.made() && !was_skipped) return std::nullopt;  // a job: look it up
  const uint32_t index = arrays::IndexAt(a->rec.spec().array(), position);
  v1::Job job;
  job.set_id(job_id);
  *job.mutable_spec() = arrays::TaskSpec(a->rec.spec(), a->rec.id(), index);
  job.set_user(a->rec.user());
  job.set_submitted_ms(a->rec.submitted_ms());
  job.set_array_id(a->rec.id());
  job.set_array_index(index);
  const std::string label = arrays::TaskLabel(a->rec.id(), index);
  if (was_skipped || !a->rec.cancelled_by().empty()) {
    job.set_state(v1::JOB_STATE_CANCELLED);
    job.set_message("cancelled before it started" +
                    (a->rec.cancelled_by().empty()
                         ? std::string()
                         : " (the array, by " + a->rec.cancelled_by() + ")"));
  } else if (a->rec.has_hold()) {
    job.set_state(v1::JOB_STATE_PENDING);
    *job.mutable_hold() = a->rec.hold();
    job.set_message("task " + label + " waits in its array, which is " + HoldText(a->rec.hold()));
  } else if (std::string deps = ArrayWaitTextLocked(*a); !deps.empty()) {
    job.set_state(v1::JOB_STATE_PENDING);
    job.set_message("task " + label + " waits in its array: the array is " + deps);
  } else {
    job.set_state(v1::JOB_STATE_PENDING);
    const v1::ArraySpec& spec = a->rec.spec().array();
    job.set_message("task " + label + " waits in its array: " +
                    (spec.has_max_running()
                         ? "at most " + std::to_string(spec.max_running()) + " tasks run at once"
                         : "its turn comes as the tasks before it start"));
  }
  return job;
}

absl::StatusOr<v1::JobArray> JobManager::GetArray(const Caller& caller, uint64_t array_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = arrays_.find(array_id);
  if (it == arrays_.end()) {
    return absl::NotFoundError("array " + std::to_string(array_id) + " not found");
  }
  return WithCountsLocked(caller, it->second);
}

v1::JobArray JobManager::WithCountsLocked(const Caller& caller, const ArrayState& a) const {
  v1::JobArray out = a.rec;  // redacted as a job of its tenant would be
  *out.mutable_spec() =
      access::ForViewer(policy_.policy.access, caller, arrays::AsJob(a.rec)).spec();
  auto& counts = *out.mutable_unfinished();
  for (uint64_t t : a.unfinished) {
    if (const JobEntry* e = jobs_.Find(t)) ++counts[StateName(e->job.state())];
  }
  if (const uint32_t unmade = arrays::Unmade(a.rec); unmade > 0) counts["pending"] += unmade;
  if (a.rec.has_hold()) {
    out.set_message(HoldText(a.rec.hold()));
  } else if (std::string deps = ArrayWaitTextLocked(a); !deps.empty()) {
    out.set_message(deps);
  }
  return out;
}

std::vector<v1::JobArray> JobManager::UnfinishedArraysLocked(const Caller& caller) const {
  std::vector<v1::JobArray> out;
  for (const auto& [id, a] : arrays_) {
    if (a.rec.finished_ms() == 0) out.push_back(WithCountsLocked(caller, a));
  }
  return out;
}

void JobManager::CancelArrayLocked(ArrayState& a, const Caller& caller, const std::string& why,
                                   Txn& txn) {
  if (a.rec.cancelled_by().empty()) {
    const uint32_t never_made = arrays::Unmade(a.rec);
    a.rec.set_cancelled_by(caller.user);
    a.rec.set_cancelled(a.rec.cancelled() + never_made);
    making_.erase(a.rec.id());  // `made` stays: the tasks above it were never jobs
  }
  for (uint64_t t : std::vector<uint64_t>(a.unfinished.begin(), a.unfinished.end())) {
    if (JobEntry* e = jobs_.Find(t)) CancelLocked(*e, caller.user, why, txn);
  }
  if (arrays::TasksLeft(a.rec) == 0 && a.rec.finished_ms() == 0) ArrayEndedLocked(a, txn);
  a.rec.set_version(a.rec.version() + 1);
  txn.batch.arrays.push_back(a.rec);
}

void JobManager::ArrayEndedLocked(ArrayState& a, Txn& txn) {
  a.rec.set_finished_ms(clock_->NowMs());
  if (!dependents_.Waited(a.rec.id())) return;
  std::vector<uint64_t> ended;
  SettleOnLocked(a.rec.id(), arrays::EndState(a.rec), txn, ended);
  SettleEndedLocked(std::move(ended), txn);
}

void JobManager::SkipTaskLocked(ArrayState& a, uint32_t position, Txn& txn) {
  a.rec.add_skipped(position);
  a.rec.set_cancelled(a.rec.cancelled() + 1);
  if (!arrays::NextPosition(a.rec)) {
    a.rec.set_made(a.rec.tasks());
    making_.erase(a.rec.id());
  }
  if (arrays::TasksLeft(a.rec) == 0 && a.rec.finished_ms() == 0) ArrayEndedLocked(a, txn);
  a.rec.set_version(a.rec.version() + 1);
  txn.batch.arrays.push_back(a.rec);
}

void JobManager::ExpireArraysLocked(absl::Time now, Txn& txn) {
  if (options_.retention <= absl::ZeroDuration() || now - arrays_checked_ < absl::Minutes(1)) {
    return;
  }
  arrays_checked_ = now;
  const int64_t before = absl::ToUnixMillis(now - options_.retention);
  for (auto it = arrays_.begin(); it != arrays_.end();) {
    const v1::JobArray& rec = it->second.rec;
    if (rec.finished_ms() == 0 || rec.finished_ms() >= before) {
      ++it;
      continue;
    }
    txn.batch.deleted_arrays.push_back(rec.id());
    it = arrays_.erase(it);
  }
}

void JobManager::ArrayOfTaskLocked(const v1::Job& job, v1::ArrayTask* out) const {
  auto it = arrays_.find(job.array_id());
  if (job.array_id() == 0 || it == arrays_.end()) return;
  const v1::ArraySpec& a = it->second.rec.spec().array();
  out->set_array_id(job.array_id());
  out->set_index(job.array_index());
  out->set_count(arrays::TaskCount(a));
  out->set_min(a.first());
  out->set_max(arrays::IndexAt(a, arrays::TaskCount(a) - 1));
  out->set_step(arrays::Step(a));
}

}  // namespace baton
