// JobManager: hold, release and requeue (issue 49). A hold is a flag on a waiting job
// that keeps it in line but never started (pass_view.cc hands it to the scheduler as
// PendingJob::held); a requeue stops a started job as a drain does and puts it back in
// line. What each call does is decided in job_state.cc; here the access check, the event
// and the commit, under the lock as every change.

#include "coordinator/access.h"
#include "coordinator/job_manager.h"
#include "coordinator/job_state.h"
#include "coordinator/scheduler/decisions.h"

namespace baton {

void JobManager::Hold(const Caller& caller, uint64_t job_id, std::string reason,
                      std::function<void(absl::StatusOr<v1::JobHold>)> done) {
  if (committer_.store_full()) return done(StoreFull());
  std::unique_lock<std::mutex> lock(mu_);
  JobEntry* found = jobs_.Find(job_id);
  if (found == nullptr) {  // finished (or unknown): no hold can apply
    lock.unlock();
    absl::StatusOr<v1::Job> job = LookupToActOn(caller, job_id, "hold");
    if (!job.ok()) return done(job.status());
    if (job->array_id() != 0 && job->state() == v1::JOB_STATE_PENDING) {
      return done(absl::FailedPreconditionError(
          "task " + std::to_string(job->array_id()) + "_" + std::to_string(job->array_index()) +
          " is not a job yet (it waits in its array): hold it once baton queue --array lists "
          "it, or cancel it"));
    }
    return done(DecideHold(*job, caller.user, false, reason, 0).status());
  }
  JobEntry& e = *found;
  const AccessPolicy& access = policy_.policy.access;
  if (absl::Status may = access::CheckMayActOn(access, caller, e.job, "hold"); !may.ok()) {
    lock.unlock();
    return done(may);
  }
  absl::StatusOr<v1::JobHold> hold =
      DecideHold(e.job, caller.user, access::IsAdmin(access, caller), reason, clock_->NowMs());
  if (!hold.ok()) {
    lock.unlock();
    return done(hold.status());
  }
  *e.job.mutable_hold() = *hold;
  Txn txn;
  NoteEvent(e, e.job.state(), HoldText(*hold), caller.user, txn, "held");
  e.said_wait = static_cast<int>(sched::Outcome::kHeld);  // this event says it already
  txn.reply = [done = std::move(done), hold = *hold] { done(hold); };
  CommitLocked(std::move(txn));
}

void JobManager::Release(const Caller& caller, uint64_t job_id,
                         std::function<void(absl::Status)> done) {
  if (committer_.store_full()) return done(StoreFull());
  std::unique_lock<std::mutex> lock(mu_);
  JobEntry* found = jobs_.Find(job_id);
  if (found == nullptr) {
    lock.unlock();
    absl::StatusOr<v1::Job> job = LookupToActOn(caller, job_id, "release");
    if (!job.ok()) return done(job.status());
    return done(CheckRelease(*job, access::IsAdmin(policy()->access, caller)));
  }
  JobEntry& e = *found;
  const AccessPolicy& access = policy_.policy.access;
  absl::Status may = access::CheckMayActOn(access, caller, e.job, "release");
  if (may.ok()) may = CheckRelease(e.job, access::IsAdmin(access, caller));
  if (!may.ok()) {
    lock.unlock();
    return done(may);
  }
  const std::string was = e.job.hold().by();
  e.job.clear_hold();
  Txn txn;
  NoteEvent(e, e.job.state(), "released by " + caller.user + " (held by " + was + ")", caller.user,
            txn, "released");
  txn.reply = [done = std::move(done)] { done(absl::OkStatus()); };
  CommitLocked(std::move(txn));
  lock.unlock();
  Kick();  // it may start now
}

void JobManager::Requeue(const Caller& caller, uint64_t job_id, std::string reason,
                         std::function<void(absl::StatusOr<v1::JobState>)> done) {
  if (committer_.store_full()) return done(StoreFull());
  std::unique_lock<std::mutex> lock(mu_);
  JobEntry* found = jobs_.Find(job_id);
  if (found == nullptr) {
    lock.unlock();
    absl::StatusOr<v1::Job> job = LookupToActOn(caller, job_id, "requeue");
    if (!job.ok()) return done(job.status());
    return done(CheckRequeue(*job, /*leaving=*/false, false, true));
  }
  JobEntry& e = *found;
  const AccessPolicy& access = policy_.policy.access;
  const PriorityClass* cls = policy_.policy.Find(e.job.spec().priority_class());
  absl::Status may = access::CheckMayActOn(access, caller, e.job, "requeue");
  if (may.ok()) {
    const bool leaving = !e.live || e.live->outcome != Outcome::kNone;
    may = CheckRequeue(e.job, leaving, cls != nullptr && cls->service,
                       access::IsAdmin(access, caller));
  }
  if (!may.ok()) {
    lock.unlock();
    return done(may);
  }
  Txn txn;
  StopAsAskedLocked(e, "requeued by " + caller.user + (reason.empty() ? "" : ": " + reason),
                    caller.user, txn);
  e.job.mutable_attempts(e.job.attempts_size() - 1)->set_requeued_by(caller.user);
  const v1::JobState now_state = e.job.state();
  txn.reply = [done = std::move(done), now_state] { done(now_state); };
  CommitLocked(std::move(txn));
}

}  // namespace baton
