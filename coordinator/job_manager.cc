// JobManager: construction, recovery, the researchers' API and the commit pipeline.
// Agent traffic lives in job_manager_agents.cc, placement in job_manager_schedule.cc.
#include "coordinator/job_manager.h"

#include <malloc.h>

#include <algorithm>
#include <csignal>
#include <optional>

#include "common/status.h"
#include "coordinator/events.h"
#include "coordinator/job_listing.h"
#include "coordinator/job_state.h"
#include "coordinator/policy_config.h"
#include "coordinator/usage/rollup.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

absl::Status NotFound(uint64_t id) {
  return absl::NotFoundError("job " + std::to_string(id) + " not found");
}

JobObserver* NoObserver() {
  static JobObserver none;
  return &none;
}

}  // namespace

// While the store waits for disk space, changes a caller asks for are refused (what is
// already pending is written once space returns); reads are served as usual.
absl::Status JobManager::StoreFull() {
  return Throttled(
      "the coordinator's disk is full: no new work or changes until an operator frees space "
      "(what was acknowledged is safe; reads still work)",
      absl::Seconds(30));
}

JobManager::JobManager(Store* store, Clock* clock, JobManagerOptions options, JobObserver* observer)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      observer_(observer ? observer : NoObserver()),
      event_log_(store),
      committer_(
          store,
          [this](const StoreBatch& written, double seconds) {
            event_log_.Published(written);
            observer_->OnStoreWrite(seconds);
          },
          DiskSpace{options_.min_free_disk_bytes, options_.min_free_disk_bytes / 4},
          options_.commit_log),
      policy_{options_.policy, {}},
      policy_snapshot_(std::make_shared<const Policy>(options_.policy)),
      ledger_(options_.policy.fair_share_half_life_s * 1000, clock->NowMs()),
      driver_(
          clock, {options_.tick_interval, options_.min_pass_interval}, [this] { Tick(); },
          [this] { SchedulePass(); }) {}

JobManager::~JobManager() { Stop(); }

absl::Status JobManager::Recover() {
  const absl::Time began = absl::Now();
  // Each job's entry is made on the thread that loads it; the table adopts them after.
  std::vector<std::map<uint64_t, JobEntry>> loaded(Store::kMaxLoadThreads);
  auto snap = store_->Load(
      {.sink = [&loaded](size_t part, v1::Job job, std::string packed, EventList events) {
        std::map<uint64_t, JobEntry>& entries = loaded[part];
        JobEntry& e = entries.try_emplace(entries.end(), job.id())->second;
        e.job = std::move(job);
        e.packed_spec = std::move(packed);
        e.events = std::move(events);
      }});
  if (!snap.ok()) return snap.status();
  std::lock_guard<std::mutex> lock(mu_);
  event_log_.Recover(snap->last_log_seq);
  policy_.version.set_yaml(options_.policy_yaml.empty() ? "# the built-in default policy\n"
                                                        : options_.policy_yaml);
  if (snap->policy) {
    // A policy an admin set outlives restarts; it wins over --policy.
    auto stored = ParsePolicy(snap->policy->yaml());
    if (!stored.ok()) return stored.status();
    policy_ = {std::move(*stored), *snap->policy};
    SetSnapshot(policy_.policy);
    spdlog::info("policy version {} (set by {}) from the store", snap->policy->version(),
                 snap->policy->author());
  }
  ledger_.set_half_life_ms(policy_.policy.fair_share_half_life_s * 1000);
  if (snap->usage) {
    // Usage decays through the downtime; nothing is charged for it (what ran is unknown).
    ledger_ =
        sched::UsageLedger(policy_.policy.fair_share_half_life_s * 1000, snap->usage->as_of_ms());
    for (const auto& [tenant, gpu_seconds] : snap->usage->gpu_seconds()) {
      ledger_.Set(tenant, gpu_seconds);
    }
    ledger_.Advance(clock_->NowMs(), {});
  }
  usage_saved_ = clock_->Now();
  next_job_id_ = snap->next_job_id;
  const absl::Time now = clock_->Now();
  for (auto& entries : loaded) {
    jobs_.Adopt(std::move(entries), [&](JobEntry& e) {
      const uint64_t id = e.job.id();
      next_job_id_ = std::max(next_job_id_, id + 1);
      submit_keys_.Add(e.job.user(), e.job.idempotency_key(), id,
                       absl::FromUnixMillis(e.job.submitted_ms()));
      e.charged = usage::MarkOf(e.job);  // charged in the writes that stored it
      if (std::optional<LiveAttempt> a = RecoverAttempt(e.job, now)) {
        jobs_.StartAttempt(e, std::move(*a));
      }
    });
  }
  for (auto& secret : snap->secrets) {
    JobEntry* e = jobs_.Find(secret.job_id());
    if (e != nullptr && e->live && static_cast<int>(secret.attempt()) == e->job.attempts_size()) {
      e->live->exec_secret = std::move(*secret.mutable_secret());
    }
  }
  const absl::Time mono = clock_->Monotonic();
  for (auto& node : snap->nodes) {
    // A fresh lease + margin to reconnect after our restart.
    observer_->OnNodeLoaded(nodes_.Load(std::move(node), mono).node);
  }
  shape_.reset();
  for (const auto& [id, e] : jobs_.all()) observer_->OnJobLoaded(e.job);
  RecoverArraysLocked(std::move(snap->arrays));
  Txn txn;
  RecoverDependenciesLocked(txn);
  if (!txn.touched.empty()) CommitLocked(std::move(txn));
  *snap = StoreSnapshot();
#ifdef __GLIBC__
  // What loading freed (the snapshot, split records) goes back to the system rather than
  // staying resident for the process's life.
  malloc_trim(0);
#endif
  spdlog::info(
      "recovered {} unfinished jobs ({} pending, {} with live attempts), {} nodes in {:.3f} s "
      "(finished jobs are read from the store when asked)",
      jobs_.size(), jobs_.queue().size(), jobs_.live().size(), nodes_.all().size(),
      absl::FDivDuration(absl::Now() - began, absl::Seconds(1)));
  return absl::OkStatus();
}

void JobManager::Start() { driver_.Start(); }

void JobManager::Stop() {
  driver_.Stop();
  committer_.Flush();
}

const ClusterShape& JobManager::ShapeLocked() const {
  if (!shape_) shape_ = ShapeOf(nodes_.all());
  return *shape_;
}

int32_t JobManager::ClassValueLocked(const std::string& priority_class) const {
  const PriorityClass* c = policy_.policy.Find(priority_class);
  return c ? c->value : 0;
}

// --- commit pipeline --------------------------------------------------------------------

void JobManager::CommitLocked(Txn txn) {
  if (dependents_.size() > 0) SettleDependentsLocked(txn);
  if (!arrays_.empty()) CountTaskEndsLocked(txn);
  ChargeUsageLocked(txn);
  std::vector<v1::Job> changed;
  for (uint64_t id : txn.touched) {
    JobEntry* e = jobs_.Find(id);
    if (e == nullptr) continue;  // finished in an earlier Txn: nothing changes it
    e->job.set_version(e->job.version() + 1);
    txn.batch.jobs.push_back(JobTable::Whole(*e));
    if (watch_.Watches(id)) changed.push_back(txn.batch.jobs.back());
  }
  const uint64_t number = ++txns_;
  committer_.Enqueue(std::move(txn.batch),
                     [this, number, commands = std::move(txn.commands),
                      changed = std::move(changed), reply = std::move(txn.reply)]() mutable {
                       durable_txns_.store(number);
                       RunEffects(std::move(commands), std::move(changed));
                       if (reply) reply();
                     });
  // Finished jobs leave the job table; they stay readable from finished_ until their final
  // record is durable and newer ones push them out.
  for (uint64_t id : txn.touched) {
    const JobEntry* e = jobs_.Find(id);
    if (e == nullptr || !IsTerminal(e->job.state()) || e->live) continue;
    reserved_nodes_.erase(id);
    JobEntry done = jobs_.Remove(id);
    finished_.Add(std::move(done.job), std::move(done.events), number);
  }
  finished_.Trim(durable_txns_.load());
}

absl::StatusOr<v1::Job> JobManager::Lookup(uint64_t id, bool with_events) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto copy = [with_events](v1::Job job, const EventList& events) {
      if (with_events) events.AppendTo(job.mutable_events());
      return job;
    };
    if (const JobEntry* e = jobs_.Find(id)) return copy(JobTable::Whole(*e), e->events);
    if (const FinishedJobs::Entry* e = finished_.Find(id)) return copy(e->job, e->events);
    if (std::optional<v1::Job> task = UnmadeTaskLocked(id)) return *task;
  }
  // Not in memory: finished, and its final record durable (finished_ keeps it until then),
  // or unknown. Read outside the lock; a finished record no longer changes.
  auto job = store_->ReadJob(id, with_events);
  if (job.status().code() == absl::StatusCode::kNotFound) return NotFound(id);
  return job;
}

void JobManager::RunEffects(std::vector<std::pair<std::string, v1::CoordinatorCommand>> commands,
                            std::vector<v1::Job> changed) {
  nodes_.Send(commands);
  watch_.Notify(changed);
}

v1::Event JobManager::LogLocked(v1::Event ev, const v1::Job* job, Txn& txn) {
  if (ev.time_ms() == 0) ev.set_time_ms(clock_->NowMs());
  if (job) {
    ev.set_tenant(job->spec().tenant());
    ev.set_priority_class(job->spec().priority_class());
  }
  ev = event_log_.Append(std::move(ev), &txn.batch);
  observer_->OnEvent(ev, job);
  return ev;
}

void JobManager::EvictedLocked(JobEntry& e, const std::string& reason, const std::string& why,
                               Txn& txn) {
  // The work it really lost: GPU-seconds since the last checkpoint it reported (the
  // scheduler's estimate at the decision is replaced).
  v1::Attempt* a = e.job.mutable_attempts(e.job.attempts_size() - 1);
  a->set_lost_gpu_seconds(events::LostGpuSeconds(e.job, clock_->NowMs()));
  a->set_eviction(reason);
  LogLocked(events::Eviction(e.job, reason, why, clock_->NowMs()), &e.job, txn);
}

void JobManager::NoteEvent(JobEntry& e, v1::JobState to, const std::string& reason,
                           const std::string& actor, Txn& txn, const std::string& code) {
  v1::Event ev;
  ev.set_job_id(e.job.id());
  ev.set_seq(e.events.size() + 1);
  ev.set_time_ms(clock_->NowMs());
  ev.set_from(e.job.state());
  ev.set_to(to);
  ev.set_reason(reason);
  ev.set_attempt(e.job.attempts_size());
  ev.set_actor(actor);
  ev.set_kind(v1::EVENT_KIND_TRANSITION);
  ev.set_code(code);
  ev = LogLocked(std::move(ev), &e.job, txn);
  txn.batch.events.push_back(ev);
  e.events.push_back(ev);
  e.job.set_message(reason);
  e.said_wait = -1;
  txn.touched.insert(e.job.id());
}

bool JobManager::Transition(JobEntry& e, v1::JobState to, const std::string& reason,
                            const std::string& actor, Txn& txn, const std::string& code) {
  v1::JobState from = e.job.state();
  if (!CanTransition(from, to)) {
    spdlog::error("job {}: refused transition {} -> {} ({})", e.job.id(), StateName(from),
                  StateName(to), reason);
    return false;
  }
  NoteEvent(e, to, reason, actor, txn, code);
  jobs_.SetState(e, to);
  if (IsTerminal(to)) e.job.set_finished_ms(clock_->NowMs());
  if (WaitsInQueue(to) && e.job.array_id() != 0 && !e.job.has_hold()) {
    // Back in line (requeued, evicted) while its array is held: held with it.
    auto a = arrays_.find(e.job.array_id());
    if (a != arrays_.end() && a->second.rec.has_hold())
      *e.job.mutable_hold() = a->second.rec.hold();
  }
  if (to != v1::JOB_STATE_PENDING) Kick();
  return true;
}

// --- researchers' API -------------------------------------------------------------------

void JobManager::Submit(const Caller& caller, v1::JobSpec spec, const std::string& idempotency_key,
                        bool hold, std::function<void(absl::StatusOr<uint64_t>)> done) {
  if (absl::Status k = SubmitKeys::Check(idempotency_key); !k.ok()) return done(k);
  if (committer_.store_full()) return done(StoreFull());
  // The jobs it waits for (array tasks by their job ids), those no longer in memory read
  // before the lock.
  FarJobs far;
  if (spec.after_size() > 0 && spec.after_size() <= deps::kMaxDependencies) {
    if (absl::Status s = ResolveArrayDependencies(&spec); !s.ok()) return done(s);
    far = FetchDependencies(spec);
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (std::optional<uint64_t> made = submit_keys_.Find(caller.user, idempotency_key)) {
    // A retry: the first submit's job, answered once it is durable (the empty Txn's reply
    // runs after every change enqueued before it).
    Txn txn;
    txn.reply = [done = std::move(done), id = *made] { done(id); };
    CommitLocked(std::move(txn));
    return;
  }
  const bool array = spec.has_array();
  absl::Status valid = array ? ValidateArraySpecLocked(caller, &spec)
                             : ValidateAndDefaultSpec(caller, policy_.policy, ShapeLocked(), &spec);
  const bool has_tenant = valid.ok();
  std::vector<v1::JobState> dep_states;
  if (valid.ok() && spec.after_size() > 0) {
    absl::StatusOr<std::vector<v1::JobState>> states = DependencyStatesLocked(spec, far);
    if (states.ok()) {
      dep_states = std::move(*states);
    } else {
      valid = states.status();
    }
  }
  // Fair use first: a throttled submit is counted, never stored (a flood costs no writes).
  // Every submit takes a token, a refused one too, so bad specs cannot flood the log.
  const Policy::Admission& limits = policy_.policy.admission;
  // The bucket is the tenant the spec was admitted into; a refused spec's tenant is only
  // what the caller said, so refusals spend the caller's own bucket.
  const char* limit = "rate";
  absl::Status fair =
      limiter_.TakeToken(has_tenant ? spec.tenant() : "user:" + caller.user, limits, clock_->Now());
  if (fair.ok() && valid.ok()) {
    // An array waits as one record: it counts once, however many tasks it has.
    limit = "waiting";
    fair = SubmitLimiter::CheckWaiting(
        spec.tenant(), jobs_.Waiting(spec.tenant()) + ArraysWaitingLocked(spec.tenant()), limits);
  }
  if (fair.ok() && valid.ok() && array) {
    limit = "array_tasks";
    fair = CheckArrayLocked(spec);
  }
  if (!fair.ok()) {
    observer_->OnSubmitThrottled(has_tenant ? spec.tenant() : "", limit);
    lock.unlock();
    return done(fair);
  }
  if (!valid.ok()) {
    Txn txn;  // the refusal is an event too; the caller hears once it is stored
    LogLocked(events::Refusal(caller, spec, valid), nullptr, txn);
    txn.reply = [done = std::move(done), valid] { done(valid); };
    CommitLocked(std::move(txn));
    return;
  }
  if (array) {
    Txn txn;
    const uint64_t id = AddArrayLocked(caller, std::move(spec), hold, txn);
    StartArrayDependenciesLocked(arrays_.at(id), dep_states, txn);
    submit_keys_.Add(caller.user, idempotency_key, id, clock_->Now());
    txn.reply = [done = std::move(done), id] { done(id); };
    CommitLocked(std::move(txn));
    lock.unlock();
    Kick();
    return;
  }
  uint64_t id = next_job_id_++;
  v1::Job job;
  job.set_id(id);
  *job.mutable_spec() = std::move(spec);
  job.set_user(caller.user);
  job.set_submitted_ms(clock_->NowMs());
  job.set_idempotency_key(idempotency_key);
  if (hold) {  // as a Hold right after the submit would make it
    *job.mutable_hold() = NewHold(caller.user, access::IsAdmin(policy_.policy.access, caller),
                                  "held at submit", clock_->NowMs());
  }
  submit_keys_.Add(caller.user, idempotency_key, id, clock_->Now());
  JobEntry& e = jobs_.Add(std::move(job));
  Txn txn;
  txn.batch.next_job_id = next_job_id_;
  Transition(e, v1::JOB_STATE_PENDING, "submitted by " + caller.user + (hold ? ", held" : ""),
             caller.user, txn);
  StartDependenciesLocked(e, dep_states, txn);
  txn.reply = [done = std::move(done), id] { done(id); };
  CommitLocked(std::move(txn));
  lock.unlock();
  Kick();
}

absl::StatusOr<v1::Job> JobManager::Get(const Caller& caller, uint64_t job_id) const {
  BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(job_id, /*with_events=*/true));
  google::protobuf::RepeatedPtrField<v1::Event> events;
  events.Swap(job.mutable_events());
  v1::Job out = access::ForViewer(policy()->access, caller, job);
  out.mutable_events()->Swap(&events);
  return out;
}

absl::StatusOr<v1::ListResponse> JobManager::List(const Caller& caller,
                                                  const v1::ListRequest& req) const {
  BATON_ASSIGN_OR_RETURN(JobListing listing, JobListing::Start(req, policy()));
  std::vector<v1::JobArray> arrays;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : jobs_.all()) listing.Consider(e.job);
    if (listing.finished_wanted()) {
      finished_.ForEach([&](const FinishedJobs::Entry& e) { listing.Consider(e.job); });
    }
    listing.Take([this](const v1::Job& job) {
      const JobEntry* e = jobs_.Find(job.id());
      return e != nullptr && &e->job == &job ? JobTable::Whole(*e) : job;
    });
    if (req.page_token().empty()) {
      for (v1::JobArray& a : UnfinishedArraysLocked(caller)) {
        if (req.tenant().empty() || a.spec().tenant() == req.tenant()) {
          arrays.push_back(std::move(a));
        }
      }
    }
  }
  BATON_RETURN_IF_ERROR(
      listing.ReadStore([this](uint64_t after_id, const std::function<bool(v1::Job)>& fn) {
        return store_->ScanFinished(after_id, fn);
      }));
  v1::ListResponse page = listing.Page(caller);
  for (auto& a : arrays) *page.add_arrays() = std::move(a);
  return page;
}

absl::StatusOr<v1::Job> JobManager::LookupToActOn(const Caller& caller, uint64_t id,
                                                  std::string_view what) const {
  BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(id, /*with_events=*/false));
  BATON_RETURN_IF_ERROR(access::CheckMayActOn(policy()->access, caller, job, what));
  return job;
}

void JobManager::Cancel(const Caller& caller, uint64_t job_id, std::string reason,
                        std::function<void(absl::StatusOr<v1::JobState>)> done) {
  if (committer_.store_full()) return done(StoreFull());
  // Nothing to do: a repeated cancel succeeds, a job that ended otherwise says so.
  auto nothing_to_do = [job_id](CancelAction action,
                                v1::JobState state) -> absl::StatusOr<v1::JobState> {
    if (action == CancelAction::kAlready) return state;
    return absl::FailedPreconditionError("job " + std::to_string(job_id) + " already " +
                                         StateName(state));
  };
  std::unique_lock<std::mutex> lock(mu_);
  JobEntry* found = jobs_.Find(job_id);
  if (ArrayState* a = found == nullptr ? ArrayOfLocked(job_id) : nullptr) {
    // An array (all of its tasks), or one of its tasks that is not a job (yet).
    if (absl::Status may = MayActOnArrayLocked(caller, *a, "cancel"); !may.ok()) {
      lock.unlock();
      return done(may);
    }
    std::string why = "cancelled by " + caller.user + (reason.empty() ? "" : ": " + reason);
    Txn txn;
    if (job_id == a->rec.id()) {
      if (a->rec.finished_ms() != 0 && a->rec.cancelled_by().empty()) {
        lock.unlock();
        return done(absl::FailedPreconditionError("array " + std::to_string(job_id) +
                                                  " already ended: every task has"));
      }
      CancelArrayLocked(*a, caller, why, txn);
    } else if (std::optional<v1::Job> task = UnmadeTaskLocked(job_id)) {
      if (task->state() == v1::JOB_STATE_PENDING) {
        SkipTaskLocked(*a, static_cast<uint32_t>(job_id - a->rec.id() - 1), txn);
      }
    } else {
      found = nullptr;  // a task that was a job and has ended: as any finished job
    }
    if (!txn.batch.empty() || !txn.touched.empty()) {
      txn.reply = [done] { done(v1::JOB_STATE_CANCELLED); };
      CommitLocked(std::move(txn));
      return;
    }
    if (job_id == a->rec.id() || UnmadeTaskLocked(job_id)) {
      lock.unlock();
      return done(v1::JOB_STATE_CANCELLED);  // already cancelled
    }
  }
  if (found == nullptr) {
    // Finished (or unknown): nothing to stop.
    lock.unlock();
    absl::StatusOr<v1::Job> job = LookupToActOn(caller, job_id, "cancel");
    if (!job.ok()) return done(job.status());
    return done(nothing_to_do(DecideCancel(*job, /*live=*/false), job->state()));
  }
  JobEntry& e = *found;
  if (absl::Status may = access::CheckMayActOn(policy_.policy.access, caller, e.job, "cancel");
      !may.ok()) {
    lock.unlock();
    return done(may);
  }
  const CancelAction action = DecideCancel(e.job, e.live != nullptr);
  if (action == CancelAction::kAlready || action == CancelAction::kRefused) {
    const v1::JobState state = e.job.state();
    lock.unlock();
    return done(nothing_to_do(action, state));
  }
  std::string why = "cancelled by " + caller.user + (reason.empty() ? "" : ": " + reason);
  Txn txn;
  CancelLocked(e, caller.user, why, txn);
  v1::JobState now_state = e.job.state();
  txn.reply = [done = std::move(done), now_state] { done(now_state); };
  CommitLocked(std::move(txn));
}

void JobManager::CancelLocked(JobEntry& e, const std::string& user, const std::string& why,
                              Txn& txn) {
  const CancelAction action = DecideCancel(e.job, e.live != nullptr);
  if (action == CancelAction::kAlready || action == CancelAction::kRefused) return;
  if (action == CancelAction::kStop) {
    e.job.set_cancel_requested_by(user);
    e.job.set_cancel_reason(why);
    NoteEvent(e, e.job.state(), "cancel requested by " + user + "; stopping processes", user, txn);
    e.live->outcome = Outcome::kCancelled;
    e.live->outcome_reason = why;
    OrderStopLocked(e, SIGTERM, e.job.spec().grace_seconds(), why, txn);
  } else {
    Transition(e, v1::JOB_STATE_CANCELLED, why, user, txn);
    e.job.set_exit_code(0);
  }
}

std::shared_ptr<const Policy> JobManager::policy() const {
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  return policy_snapshot_;
}

void JobManager::SetSnapshot(const Policy& policy) {
  auto snapshot = std::make_shared<const Policy>(policy);
  std::lock_guard<std::mutex> lock(snapshot_mu_);
  policy_snapshot_ = std::move(snapshot);
}

v1::PolicyVersion JobManager::GetPolicy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_.version;
}

void JobManager::SetPolicy(const Caller& caller, const v1::SetPolicyRequest& req,
                           std::function<void(absl::StatusOr<v1::PolicyVersion>)> done) {
  if (committer_.store_full()) return done(StoreFull());
  std::unique_lock<std::mutex> lock(mu_);
  if (absl::Status s = access::CheckAdmin(policy_.policy.access, caller, "change the policy");
      !s.ok()) {
    lock.unlock();
    return done(s);
  }
  lock.unlock();
  auto parsed = ParsePolicy(req.yaml());
  if (!parsed.ok()) return done(parsed.status());
  lock.lock();
  v1::PolicyVersion v;
  v.set_version(policy_.version.version() + 1);
  v.set_yaml(req.yaml());
  v.set_author(caller.user);
  v.set_time_ms(clock_->NowMs());
  v.set_comment(req.comment());
  if (req.dry_run()) return done(v);
  std::string what = "policy version " + std::to_string(v.version()) + ": " +
                     DescribePolicyChange(policy_.policy, *parsed) +
                     (req.comment().empty() ? "" : " (" + req.comment() + ")");
  policy_ = {std::move(*parsed), v};
  SetSnapshot(policy_.policy);
  ledger_.set_half_life_ms(policy_.policy.fair_share_half_life_s * 1000);
  // Class values may have changed: the queue's order keys with them.
  jobs_.Reorder();
  spdlog::info("{} by {}", what, caller.user);
  Txn txn;
  txn.batch.policy = v;
  LogLocked(events::PolicyChange(caller.user, what), nullptr, txn);
  txn.reply = [done = std::move(done), v] { done(v); };
  CommitLocked(std::move(txn));
  Kick();
}

absl::StatusOr<LogTarget> JobManager::FindLogs(const Caller& caller,
                                               const v1::LogsRequest& req) const {
  BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(req.job_id(), /*with_events=*/false));
  if (absl::Status may = access::CheckMayActOn(policy()->access, caller, job, "read the logs of");
      !may.ok()) {
    return may;
  }
  BATON_ASSIGN_OR_RETURN(const LogSource where, LogSourceOf(job, req));
  std::lock_guard<std::mutex> lock(mu_);
  const NodeRegistry::Entry* n = nodes_.Find(where.node);
  if (n == nullptr || n->node.address().empty()) {
    return absl::UnavailableError("node " + where.node + " is unknown");
  }
  const bool running =
      (job.state() == v1::JOB_STATE_RUNNING || job.state() == v1::JOB_STATE_SCHEDULED ||
       job.state() == v1::JOB_STATE_PREEMPTING) &&
      where.attempt == static_cast<uint32_t>(job.attempts_size());
  return LogTarget{where.node, n->node.address(), where.attempt, running};
}

void JobManager::CommitAudited(StoreBatch batch, v1::Event audit, std::function<void()> done) {
  std::lock_guard<std::mutex> lock(mu_);
  Txn txn;
  txn.batch = std::move(batch);
  LogLocked(std::move(audit), nullptr, txn);
  txn.reply = std::move(done);
  CommitLocked(std::move(txn));
}

absl::StatusOr<uint64_t> JobManager::Watch(uint64_t job_id,
                                           std::function<void(const v1::Job&)> fn) {
  std::unique_lock<std::mutex> lock(mu_);  // no change can slip between snapshot and watch
  if (const JobEntry* e = jobs_.Find(job_id)) return watch_.Add(JobTable::Whole(*e), std::move(fn));
  // Finished (it changes no more: one call) or unknown.
  lock.unlock();
  BATON_ASSIGN_OR_RETURN(v1::Job job, Lookup(job_id, /*with_events=*/false));
  return watch_.Once(job, fn);
}

void JobManager::Unwatch(uint64_t token) { watch_.Remove(token); }

}  // namespace baton
