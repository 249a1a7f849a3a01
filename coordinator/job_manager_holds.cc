// JobManager: hold, release, requeue and signal (issue 49). A hold is a flag on a waiting
// job that keeps it in line but never started (pass_view.cc hands it to the scheduler as
// PendingJob::held); a requeue stops a started job as a drain does and puts it back in
// line. What each call does is decided in job_state.cc; here the access check, the event
// and the commit, under the lock as every change. On an array's id each call reaches the
// array's tasks, as scontrol does on an array's job id: a held array makes no task a job
// until released (arrays::ToMake) and its waiting tasks are held with it.

#include <csignal>

#include "common/status.h"
#include "coordinator/access.h"
#include "coordinator/arrays.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_state.h"
#include "coordinator/scheduler/decisions.h"

namespace baton {

namespace {

std::string ArrayText(uint64_t id) { return "array " + std::to_string(id); }

v1::ArrayReach Reach(uint32_t tasks) {
  v1::ArrayReach r;
  r.set_tasks(tasks);
  return r;
}

}  // namespace

absl::Status JobManager::MayActOnArrayLocked(const Caller& caller, const ArrayState& a,
                                             std::string_view what) const {
  return access::CheckMayActOn(policy_.policy.access, caller, arrays::AsJob(a.rec), what);
}

std::vector<JobEntry*> JobManager::TasksLocked(const ArrayState& a) {
  std::vector<JobEntry*> out;
  for (uint64_t t : a.unfinished) {
    if (JobEntry* e = jobs_.Find(t)) out.push_back(e);
  }
  return out;
}

absl::StatusOr<v1::JobHold> JobManager::HoldLocked(JobEntry& e, const Caller& caller,
                                                   const std::string& reason, Txn& txn) {
  const bool admin = access::IsAdmin(policy_.policy.access, caller);
  BATON_ASSIGN_OR_RETURN(v1::JobHold hold,
                         DecideHold(e.job, caller.user, admin, reason, clock_->NowMs()));
  *e.job.mutable_hold() = hold;
  NoteEvent(e, e.job.state(), HoldText(hold), caller.user, txn, "held");
  e.said_wait = static_cast<int>(sched::Outcome::kHeld);  // this event says it already
  return hold;
}

absl::Status JobManager::ReleaseLocked(JobEntry& e, const Caller& caller, Txn& txn) {
  BATON_RETURN_IF_ERROR(CheckRelease(e.job, access::IsAdmin(policy_.policy.access, caller)));
  const std::string was = e.job.hold().by();
  e.job.clear_hold();
  NoteEvent(e, e.job.state(), "released by " + caller.user + " (held by " + was + ")", caller.user,
            txn, "released");
  return absl::OkStatus();
}

absl::Status JobManager::RequeueLocked(JobEntry& e, const Caller& caller, const std::string& reason,
                                       Txn& txn) {
  const AccessPolicy& access = policy_.policy.access;
  const PriorityClass* cls = policy_.policy.Find(e.job.spec().priority_class());
  const bool leaving = !e.live || e.live->outcome != Outcome::kNone;
  BATON_RETURN_IF_ERROR(CheckRequeue(e.job, leaving, cls != nullptr && cls->service,
                                     access::IsAdmin(access, caller)));
  StopAsAskedLocked(e, "requeued by " + caller.user + (reason.empty() ? "" : ": " + reason),
                    caller.user, txn);
  e.job.mutable_attempts(e.job.attempts_size() - 1)->set_requeued_by(caller.user);
  return absl::OkStatus();
}

template <typename Response>
bool JobManager::Act(const Caller& caller, uint64_t job_id, std::string_view what,
                     absl::FunctionRef<absl::StatusOr<Response>(ArrayState&, Txn&)> on_array,
                     absl::FunctionRef<absl::StatusOr<Response>(JobEntry&, Txn&)> on_job,
                     absl::FunctionRef<absl::StatusOr<Response>(const v1::Job&)> finished,
                     std::function<void(absl::StatusOr<Response>)> done) {
  if (committer_.store_full()) {
    done(StoreFull());
    return false;
  }
  std::unique_lock<std::mutex> lock(mu_);
  Txn txn;
  absl::StatusOr<Response> out;
  if (auto a = arrays_.find(job_id); a != arrays_.end()) {
    absl::Status may = MayActOnArrayLocked(caller, a->second, what);
    out = may.ok() ? on_array(a->second, txn) : absl::StatusOr<Response>(may);
  } else if (JobEntry* e = jobs_.Find(job_id); e != nullptr) {
    absl::Status may = access::CheckMayActOn(policy_.policy.access, caller, e->job, what);
    out = may.ok() ? on_job(*e, txn) : absl::StatusOr<Response>(may);
  } else {  // finished (or unknown): read outside the lock
    lock.unlock();
    absl::StatusOr<v1::Job> job = LookupToActOn(caller, job_id, what);
    done(job.ok() ? finished(*job) : absl::StatusOr<Response>(job.status()));
    return false;
  }
  if (!out.ok()) {
    lock.unlock();
    done(out.status());
    return false;
  }
  txn.reply = [done = std::move(done), resp = *std::move(out)] { done(resp); };
  CommitLocked(std::move(txn));
  return true;
}

void JobManager::Hold(const Caller& caller, uint64_t job_id, std::string reason,
                      std::function<void(absl::StatusOr<v1::HoldResponse>)> done) {
  using R = absl::StatusOr<v1::HoldResponse>;
  Act<v1::HoldResponse>(
      caller, job_id, "hold",
      [&](ArrayState& a, Txn& txn) { return HoldArrayLocked(a, caller, reason, txn); },
      [&](JobEntry& e, Txn& txn) -> R {
        BATON_ASSIGN_OR_RETURN(v1::JobHold hold, HoldLocked(e, caller, reason, txn));
        v1::HoldResponse resp;
        *resp.mutable_hold() = std::move(hold);
        return resp;
      },
      [&](const v1::Job& job) -> R {  // no hold applies to a job that ended
        if (job.array_id() != 0 && job.state() == v1::JOB_STATE_PENDING) {
          return absl::FailedPreconditionError(
              "task " + arrays::TaskLabel(job.array_id(), job.array_index()) +
              " is not a job yet (it waits in its array): hold the whole array (baton hold " +
              std::to_string(job.array_id()) + "), or this task once baton queue --array lists it");
        }
        BATON_RETURN_IF_ERROR(DecideHold(job, caller.user, false, reason, 0).status());
        return v1::HoldResponse();
      },
      std::move(done));
}

void JobManager::Release(const Caller& caller, uint64_t job_id,
                         std::function<void(absl::StatusOr<v1::ReleaseResponse>)> done) {
  using R = absl::StatusOr<v1::ReleaseResponse>;
  const bool released = Act<v1::ReleaseResponse>(
      caller, job_id, "release",
      [&](ArrayState& a, Txn& txn) { return ReleaseArrayLocked(a, caller, txn); },
      [&](JobEntry& e, Txn& txn) -> R {
        BATON_RETURN_IF_ERROR(ReleaseLocked(e, caller, txn));
        return v1::ReleaseResponse();
      },
      [&](const v1::Job& job) -> R {
        BATON_RETURN_IF_ERROR(CheckRelease(job, access::IsAdmin(policy()->access, caller)));
        return v1::ReleaseResponse();
      },
      std::move(done));
  if (released) Kick();  // it may start now
}

void JobManager::Requeue(const Caller& caller, uint64_t job_id, std::string reason,
                         std::function<void(absl::StatusOr<v1::RequeueResponse>)> done) {
  using R = absl::StatusOr<v1::RequeueResponse>;
  Act<v1::RequeueResponse>(
      caller, job_id, "requeue",
      [&](ArrayState& a, Txn& txn) { return RequeueArrayLocked(a, caller, reason, txn); },
      [&](JobEntry& e, Txn& txn) -> R {
        BATON_RETURN_IF_ERROR(RequeueLocked(e, caller, reason, txn));
        v1::RequeueResponse resp;
        resp.set_state(e.job.state());
        return resp;
      },
      [&](const v1::Job& job) -> R {
        BATON_RETURN_IF_ERROR(CheckRequeue(job, /*leaving=*/false, false, true));
        return v1::RequeueResponse();
      },
      std::move(done));
}

absl::StatusOr<v1::SignalResponse> JobManager::Signal(const Caller& caller, uint64_t job_id,
                                                      int signal) {
  if (signal != SIGUSR1 && signal != SIGUSR2) {
    return absl::InvalidArgumentError("signal " + std::to_string(signal) +
                                      ": only USR1 (checkpoint now) and USR2 reach ranks; use "
                                      "cancel to stop a job");
  }
  std::vector<std::pair<std::string, v1::CoordinatorCommand>> commands;
  v1::SignalResponse resp;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (auto a = arrays_.find(job_id); a != arrays_.end()) {
      BATON_RETURN_IF_ERROR(MayActOnArrayLocked(caller, a->second, "signal"));
      uint32_t n = 0;
      for (JobEntry* e : TasksLocked(a->second)) n += SignalLocked(*e, signal, commands).ok();
      if (n == 0) {
        return absl::FailedPreconditionError(ArrayText(job_id) + " has no running task to signal");
      }
      *resp.mutable_array() = Reach(n);
    } else if (const JobEntry* found = jobs_.Find(job_id); found != nullptr) {
      BATON_RETURN_IF_ERROR(
          access::CheckMayActOn(policy_.policy.access, caller, found->job, "signal"));
      BATON_RETURN_IF_ERROR(SignalLocked(*found, signal, commands));
    } else {
      lock.unlock();
      BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(job_id, /*with_events=*/false));
      BATON_RETURN_IF_ERROR(access::CheckMayActOn(policy()->access, caller, job, "signal"));
      return absl::FailedPreconditionError("job " + std::to_string(job_id) + " is " +
                                           StateName(job.state()) + ", not running");
    }
  }
  RunEffects(std::move(commands), {});  // nothing to store: a signal changes no state
  return resp;
}

absl::Status JobManager::SignalLocked(
    const JobEntry& e, int signal,
    std::vector<std::pair<std::string, v1::CoordinatorCommand>>& commands) const {
  if (!e.live || e.job.state() != v1::JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError("job " + std::to_string(e.job.id()) + " is " +
                                         StateName(e.job.state()) + ", not running");
  }
  for (const std::string& node : UnendedParts(*e.live)) {
    v1::CoordinatorCommand cmd;
    cmd.mutable_signal()->set_job_id(e.job.id());
    cmd.mutable_signal()->set_attempt(e.job.attempts_size());
    cmd.mutable_signal()->set_signal(signal);
    commands.emplace_back(node, std::move(cmd));
  }
  return absl::OkStatus();
}

// --- a whole array ----------------------------------------------------------------------

absl::StatusOr<v1::HoldResponse> JobManager::HoldArrayLocked(ArrayState& a, const Caller& caller,
                                                             const std::string& reason, Txn& txn) {
  const uint64_t id = a.rec.id();
  if (a.rec.finished_ms() != 0 || !a.rec.cancelled_by().empty()) {
    return absl::FailedPreconditionError(
        ArrayText(id) + (a.rec.cancelled_by().empty() ? " has ended" : " was cancelled") +
        "; only a waiting array or task can be held");
  }
  uint32_t n = 0;
  for (JobEntry* e : TasksLocked(a)) {
    if (WaitsInQueue(e->job.state())) n += HoldLocked(*e, caller, reason, txn).ok();
  }
  const uint32_t unmade = arrays::Unmade(a.rec);
  if (n == 0 && unmade == 0) {
    return absl::FailedPreconditionError(ArrayText(id) +
                                         " has no waiting task to hold: every task has started "
                                         "or ended (requeue or cancel them)");
  }
  const bool admin = access::IsAdmin(policy_.policy.access, caller);
  *a.rec.mutable_hold() = NewHold(
      caller.user, admin || (a.rec.has_hold() && a.rec.hold().by_admin()), reason, clock_->NowMs());
  a.batch = 0;  // after a release it starts again small
  a.rec.set_version(a.rec.version() + 1);
  txn.batch.arrays.push_back(a.rec);
  v1::HoldResponse resp;
  *resp.mutable_hold() = a.rec.hold();
  *resp.mutable_array() = Reach(n + unmade);
  return resp;
}

absl::StatusOr<v1::ReleaseResponse> JobManager::ReleaseArrayLocked(ArrayState& a,
                                                                   const Caller& caller, Txn& txn) {
  const uint64_t id = a.rec.id();
  const bool admin = access::IsAdmin(policy_.policy.access, caller);
  if (a.rec.has_hold() && a.rec.hold().by_admin() && !admin) {
    return absl::PermissionDeniedError(ArrayText(id) + " is held by an admin (" +
                                       a.rec.hold().by() + "); only an admin releases it");
  }
  uint32_t n = 0;
  absl::Status refused;  // a task an admin held alone stays held for a member
  for (JobEntry* e : TasksLocked(a)) {
    if (!e->job.has_hold()) continue;
    absl::Status s = ReleaseLocked(*e, caller, txn);
    n += s.ok();
    if (!s.ok() && refused.ok()) refused = s;
  }
  if (a.rec.has_hold()) {
    n += arrays::Unmade(a.rec);
    a.rec.clear_hold();
    a.rec.set_version(a.rec.version() + 1);
    txn.batch.arrays.push_back(a.rec);
  } else if (n == 0) {
    if (!refused.ok()) return refused;
    return absl::FailedPreconditionError(ArrayText(id) + " is not held, nor any of its tasks");
  }
  v1::ReleaseResponse resp;
  *resp.mutable_array() = Reach(n);
  return resp;
}

absl::StatusOr<v1::RequeueResponse> JobManager::RequeueArrayLocked(ArrayState& a,
                                                                   const Caller& caller,
                                                                   const std::string& reason,
                                                                   Txn& txn) {
  uint32_t n = 0;
  absl::Status refused;
  for (JobEntry* e : TasksLocked(a)) {
    if (e->job.state() != v1::JOB_STATE_SCHEDULED && e->job.state() != v1::JOB_STATE_RUNNING) {
      continue;
    }
    absl::Status s = RequeueLocked(*e, caller, reason, txn);
    n += s.ok();
    if (!s.ok() && refused.ok()) refused = s;
  }
  if (n == 0) {
    if (absl::IsPermissionDenied(refused)) return refused;
    return absl::FailedPreconditionError(ArrayText(a.rec.id()) +
                                         " has no started task to requeue (only scheduled or "
                                         "running tasks are)");
  }
  v1::RequeueResponse resp;
  resp.set_state(v1::JOB_STATE_PREEMPTING);
  *resp.mutable_array() = Reach(n);
  return resp;
}

}  // namespace baton
