// JobManager: the coordinator's in-memory truth about jobs and nodes, mirrored in the
// Store. Owns the job lifecycle (submit, schedule, launch, reports, cancel, node loss,
// restarts), agent reconciliation, and watchers. Every change is made under one mutex
// and handed to the Committer; its effects (RPC replies, commands to agents, watch
// notifications) run only once the change is durable. Every change is also an event in
// the global log (event_log.h) and is told to the JobObserver (observer.h).
// Called by the gRPC services and the scheduler thread. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/access.h"
#include "coordinator/agent_link.h"
#include "coordinator/attempt_end.h"
#include "coordinator/committer.h"
#include "coordinator/dependencies.h"
#include "coordinator/event_log.h"
#include "coordinator/finished_jobs.h"
#include "coordinator/job_table.h"
#include "coordinator/node_registry.h"
#include "coordinator/observer.h"
#include "coordinator/pass_view.h"
#include "coordinator/policy.h"
#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler_driver.h"
#include "coordinator/spec_validation.h"
#include "coordinator/store.h"
#include "coordinator/submit_keys.h"
#include "coordinator/submit_limiter.h"
#include "coordinator/watch_hub.h"
#include "proto/agent.pb.h"
#include "proto/rpc_util.h"

namespace baton {

struct JobManagerOptions {
  Policy policy = Policy::Default();
  std::string policy_yaml;  // the text `policy` came from ("" for the built-in default)
  absl::Duration heartbeat_interval = absl::Seconds(1);  // agents send a heartbeat this often
  absl::Duration lease = absl::Seconds(10);       // an agent cut off this long stops its jobs
  absl::Duration lost_margin = absl::Seconds(5);  // node declared lost after lease + margin
  absl::Duration usage_save_interval = absl::Minutes(1);  // the fair-share ledger is stored
  absl::Duration retry_backoff_base = absl::Seconds(1);   // failure retry backoff, doubling
  absl::Duration retry_backoff_max = absl::Minutes(1);
  uint32_t failure_kill_grace_seconds = 10;  // grace for the rest of a gang after a failure
  absl::Duration tick_interval = absl::Milliseconds(250);     // leases, runtimes, backoffs checked
  absl::Duration min_pass_interval = absl::Milliseconds(20);  // passes coalesce bursts
  // Grace extension: while an evicted job's checkpoint is being written its kill deadline
  // moves to now + grace, but never past Preempt + this many graces (the hard cap).
  double grace_cap_factor = 3.0;
  // Below this much free space on the store's disk new work is refused (reads served);
  // below a quarter of it writes wait until space is freed (DiskSpace).
  uint64_t min_free_disk_bytes = 256ull << 20;
  // Finished jobs (and their events) are deleted this long after their end; 0: kept.
  absl::Duration retention = absl::Hours(30 * 24);
  // Usage rollup days are deleted this long after they end; 0: kept (--usage-retention).
  absl::Duration usage_retention = absl::Hours(400 * 24);
  // Finished jobs stay in memory (for status, logs and watchers right after the end) until
  // this many newer ones have finished; older ones are read from the store when asked.
  size_t finished_in_memory = 4096;
  // With HA: the replicated log every change goes to before the store (committer.h);
  // nullptr for the single-node store. Must outlive the JobManager.
  CommitLog* commit_log = nullptr;
  // With HA: this leader's epoch, stamped on every command to agents (0: single node).
  uint64_t leader_epoch = 0;

  // A node silent this long is declared lost.
  absl::Duration lost_after() const { return lease + lost_margin; }
};

// Where a job's log lives: the agent to ask and which attempt.
struct LogTarget {
  std::string node;
  std::string address;
  uint32_t attempt = 0;
  bool running = false;  // `attempt` is the job's current one and its processes run
};

class JobManager {
 public:
  // `observer` (may be null) must outlive the JobManager.
  JobManager(Store* store, Clock* clock, JobManagerOptions options,
             JobObserver* observer = nullptr);
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Loads the unfinished jobs (with their events), the nodes and the scheduler's state
  // from the store; finished jobs stay there, read when asked, so the time this takes
  // follows live work, not history (logged). Nodes start disconnected and get lease +
  // margin to come back before their jobs are requeued. Call before Start.
  absl::Status Recover();
  // Starts the scheduler thread (ticks and scheduling passes: SchedulerDriver).
  void Start();
  // Stops the scheduler thread and drains pending commits.
  void Stop();

  // --- researchers' API ---------------------------------------------------------------
  // Every call's `caller` was proven by the service (authn.h); what it may do is checked
  // here (access.h) against the policy in force, under the same lock as the change.
  void Submit(const Caller& caller, v1::JobSpec spec,
              std::function<void(absl::StatusOr<uint64_t>)> done) {
    Submit(caller, std::move(spec), "", std::move(done));
  }
  // With an idempotency key (SubmitRequest): a retry of a submit that made a job returns
  // that job's id, once the job is durable, and makes none.
  void Submit(const Caller& caller, v1::JobSpec spec, const std::string& idempotency_key,
              std::function<void(absl::StatusOr<uint64_t>)> done) {
    Submit(caller, std::move(spec), idempotency_key, /*hold=*/false, std::move(done));
  }
  // `hold`: the job is made held (sbatch --hold), by the caller.
  void Submit(const Caller& caller, v1::JobSpec spec, const std::string& idempotency_key, bool hold,
              std::function<void(absl::StatusOr<uint64_t>)> done);
  // One job, or every matching one, as `caller` may see them (access::ForViewer). A task
  // of an array not yet a job is shown as one (PENDING, or CANCELLED before it started).
  absl::StatusOr<v1::Job> Get(const Caller& caller, uint64_t job_id) const;
  // An array's record with its tasks' counts by state; NotFound for no such array. Cancel
  // of an array's id cancels every task.
  absl::StatusOr<v1::JobArray> GetArray(const Caller& caller, uint64_t array_id) const;
  // One page of the listing (ListRequest's paging); InvalidArgument for a bad token.
  absl::StatusOr<v1::ListResponse> List(const Caller& caller, const v1::ListRequest& req) const;
  void Cancel(const Caller& caller, uint64_t job_id, std::string reason,
              std::function<void(absl::StatusOr<v1::JobState>)> done);
  // Hold and release (job_manager_holds.cc; job_state.h says what each does): as cancel,
  // for the owner, members of its tenant and admins. The reply comes once it is stored.
  // On an array's id they reach its tasks (api.proto says how; the reply's `array` counts).
  void Hold(const Caller& caller, uint64_t job_id, std::string reason,
            std::function<void(absl::StatusOr<v1::HoldResponse>)> done);
  void Release(const Caller& caller, uint64_t job_id,
               std::function<void(absl::StatusOr<v1::ReleaseResponse>)> done);
  // Requeue: a started job stopped as a drain stops it and put back in line; replies with
  // its state (PREEMPTING while it stops).
  void Requeue(const Caller& caller, uint64_t job_id, std::string reason,
               std::function<void(absl::StatusOr<v1::RequeueResponse>)> done);
  // Why a job waits and whom the next pass would evict for it (the scheduler's Explain).
  absl::StatusOr<v1::ExplainResponse> Explain(uint64_t job_id) const;
  // Every tenant's fair-share standing, the ledger advanced to now.
  v1::SharesResponse Shares() const;
  // The policy in force, as YAML with its version.
  v1::PolicyVersion GetPolicy() const;
  // The policy in force, for checks made outside the lock (the services' authorization);
  // replaced, never changed, by SetPolicy.
  std::shared_ptr<const Policy> policy() const;
  // Admins only. The YAML is checked whole (InvalidArgument naming every problem), stored
  // as the next version with the caller as author, then applied.
  void SetPolicy(const Caller& caller, const v1::SetPolicyRequest& req,
                 std::function<void(absl::StatusOr<v1::PolicyVersion>)> done);
  // SIGUSR1/SIGUSR2 to a running job's ranks, on every node of its gang (an array's id:
  // every running task's).
  absl::StatusOr<v1::SignalResponse> Signal(const Caller& caller, uint64_t job_id, int signal);
  std::vector<v1::Node> ListNodes() const;
  // ListNodes with the policy's topology levels: what `baton nodes` and the dashboard get.
  v1::ListNodesResponse NodeListing() const;
  // Admins (the service checks): a drained node takes no new work; with `evict` its jobs
  // are told to checkpoint and exit, then placed elsewhere with no cooldown and no
  // eviction counted. NotFound for a node that never registered. `done` gets the node
  // once the change is durable.
  void DrainNode(const Caller& caller, const v1::DrainNodeRequest& req,
                 std::function<void(absl::StatusOr<v1::Node>)> done);
  void UndrainNode(const Caller& caller, const std::string& node,
                   std::function<void(absl::StatusOr<v1::Node>)> done);
  absl::StatusOr<LogTarget> FindLogs(const Caller& caller, const v1::LogsRequest& req) const;

  // Accounting (job_manager_usage.cc): the usage rollup over whole UTC days (members: their
  // own tenants', PermissionDenied for another's; admins: all), and the finished jobs still
  // retained, newest end first, as List shows them.
  absl::StatusOr<v1::UsageResponse> Usage(const Caller& caller, const v1::UsageRequest& req) const;
  absl::StatusOr<v1::HistoryResponse> History(const Caller& caller,
                                              const v1::HistoryRequest& req) const;

  // Stores `batch` (an admin's change outside jobs: a service token) with an audit event
  // in the global log (events::AccessChange); `done` runs once it is durable.
  void CommitAudited(StoreBatch batch, v1::Event audit, std::function<void()> done);

  // Calls `fn` with the job as it is now, then after every durable change until Unwatch
  // (versions may repeat or, right after the first call, be older: compare `version`).
  // NotFound for unknown jobs. Later calls run on the committer thread.
  absl::StatusOr<uint64_t> Watch(uint64_t job_id, std::function<void(const v1::Job&)> fn);
  void Unwatch(uint64_t token);

  // --- events -------------------------------------------------------------------------
  // The global event log, for the Events RPC.
  const EventLog& event_log() const { return event_log_; }

  // --- agents ---------------------------------------------------------------------------
  absl::Status AgentRegister(const v1::Register& reg, std::shared_ptr<AgentLink> link);
  // Heard from the node; a heartbeat's GPU sample is kept for ListNodes (the node's own
  // GPUs only).
  void AgentHeartbeat(const std::string& node, const v1::Heartbeat& heartbeat = {});
  void AgentReport(const std::string& node, const v1::AttemptReport& report);
  // Ignored unless `link` is still the node's current link (a newer stream replaced it).
  void AgentDisconnected(const std::string& node, const AgentLink* link);

  // --- driven by the scheduler thread; public for tests ---------------------------------
  void Tick();
  void SchedulePass();
  void Flush() { committer_.Flush(); }
  uint64_t commits() const { return committer_.commits(); }
  uint64_t leader_epoch() const { return options_.leader_epoch; }
  // True while the store waits for disk space (Committer::store_full).
  bool store_full() const { return committer_.store_full(); }

 private:
  using Phase = AttemptPhase;
  using Outcome = AttemptOutcome;
  // One change in progress: what to write and what to do once it is durable.
  struct Txn {
    StoreBatch batch;
    std::set<uint64_t> touched;
    std::vector<std::pair<std::string, v1::CoordinatorCommand>> commands;
    std::function<void()> reply;
  };

  void CommitLocked(Txn txn);
  // The job as it is now, from memory or else its stored record (finished: it no longer
  // changes). Call without mu_ held; NotFound for unknown (or deleted) jobs.
  absl::StatusOr<v1::Job> Lookup(uint64_t id, bool with_events) const;
  // A job no longer in memory (finished, or unknown: NotFound) that `caller` may `what`
  // (access::CheckMayActOn). Call without mu_ held.
  absl::StatusOr<v1::Job> LookupToActOn(const Caller& caller, uint64_t id,
                                        std::string_view what) const;
  // Retention: the finished jobs to delete now, read from the store (without mu_), at most
  // once a minute unless the last call hit its limit.
  std::vector<uint64_t> ExpiredJobs();
  void SetSnapshot(const Policy& policy);
  void RunEffects(std::vector<std::pair<std::string, v1::CoordinatorCommand>> commands,
                  std::vector<v1::Job> changed);
  // `code`: a machine-readable cause for the event ("failure" marks a retry).
  bool Transition(JobEntry& e, v1::JobState to, const std::string& reason, const std::string& actor,
                  Txn& txn, const std::string& code = "");
  void NoteEvent(JobEntry& e, v1::JobState to, const std::string& reason, const std::string& actor,
                 Txn& txn, const std::string& code = "");
  // Numbers `ev` into the global log of `txn` and tells the observer; `job` (may be null)
  // as it is before the event.
  v1::Event LogLocked(v1::Event ev, const v1::Job* job, Txn& txn);
  // The job's current attempt was evicted for `reason` ("node_lost", "preempted", …) and
  // has ended: one EVICTION event with its lost work, counted by the metrics.
  void EvictedLocked(JobEntry& e, const std::string& reason, const std::string& why, Txn& txn);
  // A priority class's value under the policy in force (0 unknown): the queue's order.
  int32_t ClassValueLocked(const std::string& priority_class) const;
  // The scheduler's input (ViewOf, pass_view.h) with tenants' usage: `ledger` (ledger_,
  // or a copy for a look) is charged up to `now` for what runs.
  sched::ClusterView ViewWithUsageLocked(absl::Time now, sched::UsageLedger& ledger) const;
  // Deletes `expired` (ExpiredJobs) with their events.
  void DeleteExpiredLocked(const std::vector<uint64_t>& expired, Txn& txn);
  void PlaceLocked(JobEntry& e, const sched::Placement& p, const sched::ClusterView& view,
                   Txn& txn);
  void EvictLocked(JobEntry& e, const sched::Eviction& ev, Txn& txn,
                   const std::string& actor = "scheduler");
  // An eviction someone asked for (a drain with --evict, a requeue), not a higher class:
  // the eviction handshake with `why`, by `actor`; the caller marks the attempt.
  void StopAsAskedLocked(JobEntry& e, const std::string& why, const std::string& actor, Txn& txn);
  v1::CoordinatorCommand PreemptCommandLocked(const JobEntry& e) const;
  // Evictions: pushes the kill deadline out while a checkpoint is being written, up to
  // the cap, and tells the gang's agents (job_manager_schedule.cc).
  void ExtendGraceLocked(JobEntry& e, Txn& txn);
  v1::CoordinatorCommand LaunchCommandLocked(const JobEntry& e, uint32_t node_rank) const;
  void OrderStopLocked(JobEntry& e, int signal, uint32_t grace, const std::string& reason,
                       Txn& txn);
  // `registering`: the report comes with a (re)registration, so the agent may have missed
  // the stop orders for it: they are sent again (else only with its first running report).
  void ApplyReportLocked(const std::string& node, const v1::AttemptReport& r, bool registering,
                         Txn& txn);
  void SendStopLocked(const JobEntry& e, const StopOrder& order, Txn& txn);
  // A stop `fx` orders goes to the gang; an attempt whose parts have all ended finishes.
  void ApplyEffectsLocked(JobEntry& e, const ReportEffects& fx, Txn& txn);
  void FinishAttemptLocked(JobEntry& e, Txn& txn);
  void ReconcileNodeLocked(const std::string& node, const v1::Register& reg, Txn& txn);
  // A node silent past lease + margin: no new work; its attempts stay until their own
  // bound (ReplaceAfterLocked), when ReplaceLostAttemptsLocked requeues them.
  void NodeLostLocked(NodeRegistry::Entry& n, Txn& txn);
  // How long a lost node's attempt of `e` may stay silent before it is replaced.
  absl::Duration ReplaceAfterLocked(const JobEntry& e) const;
  void ReplaceLostAttemptsLocked(const std::string& node, absl::Duration silent, Txn& txn);
  void Kick() { driver_.Kick(); }
  // The refusal of a change while the store waits for disk space.
  static absl::Status StoreFull();

  // Dependencies (job_manager_dependencies.cc). The records of the jobs a spec's `after`
  // names, read without mu_ (only those no longer in memory are used).
  using FarJobs = std::map<uint64_t, absl::StatusOr<v1::Job>>;
  FarJobs FetchDependencies(const v1::JobSpec& spec) const;
  // The state of each job `spec.after` names (in memory, else from `far`): NotFound for
  // one that does not exist, InvalidArgument for a service (deps::CheckTarget).
  absl::StatusOr<std::vector<v1::JobState>> DependencyStatesLocked(const v1::JobSpec& spec,
                                                                   const FarJobs& far) const;
  // A new job `e` (PENDING) with its dependencies' `states`: those met are recorded, those
  // waiting indexed; one never to be met cancels it.
  void StartDependenciesLocked(JobEntry& e, const std::vector<v1::JobState>& states, Txn& txn);
  // The job `e.job.spec().after(index)` names is in `state` (UNSPECIFIED: not on record):
  // met (recorded, with an event), or never (`e` CANCELLED: true), or still waiting.
  bool SettleLocked(JobEntry& e, int index, v1::JobState state, Txn& txn);
  // The jobs `txn` ended settle their dependents, and theirs in turn (CommitLocked).
  void SettleDependentsLocked(Txn& txn);
  // The dependents of `id` (a job or an array) that ended in `state`; those it cancels are
  // added to `ended`, whose dependents SettleEndedLocked settles in turn.
  void SettleOnLocked(uint64_t id, v1::JobState state, Txn& txn, std::vector<uint64_t>& ended);
  void SettleEndedLocked(std::vector<uint64_t> ended, Txn& txn);
  // A spec's dependencies on array tasks (ok:17_3) become dependencies on the tasks' job
  // ids; NotFound for an array or index that does not exist. Takes mu_.
  absl::Status ResolveArrayDependencies(v1::JobSpec* spec) const;
  // Recover: the dependents index rebuilt; any dependency whose job ended unrecorded is
  // settled.
  void RecoverDependenciesLocked(Txn& txn);
  // The state of job or array `on` that a dependency waits for, if it has ended
  // (UNSPECIFIED: no longer on record; reads the store for a job not in memory, so only
  // at recovery); nullopt while it has not.
  std::optional<v1::JobState> EndedStateLocked(uint64_t on) const;

  // Arrays (job_manager_arrays.cc). An array's record and its tasks that are jobs and
  // have not ended.
  struct ArrayState {
    v1::JobArray rec;
    std::set<uint64_t> unfinished;
    uint32_t batch = 0;  // the last batch of tasks made (arrays::ToMake)
  };
  // The array whose id or task ids include `job_id`; nullptr for none.
  ArrayState* ArrayOfLocked(uint64_t job_id);
  const ArrayState* ArrayOfLocked(uint64_t job_id) const;
  // Tasks of the tenant's arrays not yet ended; arrays with tasks still to be made.
  uint32_t ArrayTasksLeftLocked(const std::string& tenant) const;
  uint32_t ArraysWaitingLocked(const std::string& tenant) const;
  const ClusterShape& ShapeLocked() const;
  // An array's spec checked (shape, and as its task with the longest %A/%a substitution)
  // and defaulted; then what admission allows for it.
  absl::Status ValidateArraySpecLocked(const Caller& caller, v1::JobSpec* spec) const;
  absl::Status CheckArrayLocked(const v1::JobSpec& spec) const;
  // A new array (held: as a Hold right after the submit would make it): its record, and
  // ids for it and every task. Returns its id.
  uint64_t AddArrayLocked(const Caller& caller, v1::JobSpec spec, bool hold, Txn& txn);
  // The next tasks of each array that may start become jobs (a pass's first step).
  void MakeTasksLocked(Txn& txn);
  void MakeTaskLocked(ArrayState& a, uint32_t position, Txn& txn);
  // Tasks `txn` ended are counted in their arrays' records (CommitLocked).
  void CountTaskEndsLocked(Txn& txn);
  void RecoverArraysLocked(std::vector<v1::JobArray> arrays);
  // A task that is not a job (yet, or ever: cancelled first), as a job for status.
  std::optional<v1::Job> UnmadeTaskLocked(uint64_t job_id) const;
  // The record with its tasks' counts, as `caller` may see it (env redacted).
  v1::JobArray WithCountsLocked(const Caller& caller, const ArrayState& a) const;
  std::vector<v1::JobArray> UnfinishedArraysLocked(const Caller& caller) const;
  // Cancel of a whole array: no more tasks made, those that are jobs cancelled as cancel
  // does; of one task not yet a job: it never will be.
  void CancelArrayLocked(ArrayState& a, const Caller& caller, const std::string& why, Txn& txn);
  // Hold, release, requeue and signal of one job, the access check made
  // (job_manager_holds.cc), and of a whole array: each of its tasks the call applies to,
  // the array's own hold; the error when it applies to none.
  absl::StatusOr<v1::JobHold> HoldLocked(JobEntry& e, const Caller& caller,
                                         const std::string& reason, Txn& txn);
  absl::Status ReleaseLocked(JobEntry& e, const Caller& caller, Txn& txn);
  absl::Status RequeueLocked(JobEntry& e, const Caller& caller, const std::string& reason,
                             Txn& txn);
  absl::Status SignalLocked(
      const JobEntry& e, int signal,
      std::vector<std::pair<std::string, v1::CoordinatorCommand>>& commands) const;
  absl::StatusOr<v1::HoldResponse> HoldArrayLocked(ArrayState& a, const Caller& caller,
                                                   const std::string& reason, Txn& txn);
  absl::StatusOr<v1::ReleaseResponse> ReleaseArrayLocked(ArrayState& a, const Caller& caller,
                                                         Txn& txn);
  absl::StatusOr<v1::RequeueResponse> RequeueArrayLocked(ArrayState& a, const Caller& caller,
                                                         const std::string& reason, Txn& txn);
  // One Hold, Release or Requeue on a job's or an array's id: under the lock, the access
  // check for `what`, then `on_array` or `on_job`, whose changes go in one commit that
  // answers `done`; `finished` answers for a job no longer in memory (read outside the
  // lock). True when it committed.
  template <typename Response>
  bool Act(const Caller& caller, uint64_t job_id, std::string_view what,
           absl::FunctionRef<absl::StatusOr<Response>(ArrayState&, Txn&)> on_array,
           absl::FunctionRef<absl::StatusOr<Response>(JobEntry&, Txn&)> on_job,
           absl::FunctionRef<absl::StatusOr<Response>(const v1::Job&)> finished,
           std::function<void(absl::StatusOr<Response>)> done);
  // Whether `caller` may act on the array's tasks (as on a job of its tenant and user).
  absl::Status MayActOnArrayLocked(const Caller& caller, const ArrayState& a,
                                   std::string_view what) const;
  // The array's tasks that are jobs and have not ended, in id order.
  std::vector<JobEntry*> TasksLocked(const ArrayState& a);
  void SkipTaskLocked(ArrayState& a, uint32_t position, Txn& txn);
  // An array with dependencies waits as a whole (no task is made) until every one is met;
  // one never met cancels it (job_manager_dependencies.cc), as for a job.
  void StartArrayDependenciesLocked(ArrayState& a, const std::vector<v1::JobState>& states,
                                    Txn& txn);
  bool SettleArrayLocked(ArrayState& a, int index, v1::JobState state, Txn& txn);
  // "waiting for job 17 to succeed (it is running)" while its dependencies are unmet.
  std::string ArrayWaitTextLocked(const ArrayState& a) const;
  // Every task of `a` has ended: the record says when, and the jobs that wait for the whole
  // array are settled.
  void ArrayEndedLocked(ArrayState& a, Txn& txn);
  // Arrays that ended longer than the retention ago lose their record (their tasks go as
  // jobs do); at most once a minute.
  void ExpireArraysLocked(absl::Time now, Txn& txn);
  // What a task's launch tells its ranks of its array (BATON_ARRAY_*).
  void ArrayOfTaskLocked(const v1::Job& job, v1::ArrayTask* out) const;
  // Accounting (job_manager_usage.cc). The jobs `txn` touched charge the usage rollup with
  // what their records add beyond their marks (CommitLocked); rollup days past the usage
  // retention are deleted (Tick).
  void ChargeUsageLocked(Txn& txn);
  void ExpireUsageLocked(absl::Time now, Txn& txn);

  // A cancel by `user` that the caller may make: stops a live attempt (SIGTERM, grace),
  // else CANCELLED at once.
  void CancelLocked(JobEntry& e, const std::string& user, const std::string& why, Txn& txn);

  Store* const store_;
  Clock* const clock_;
  const JobManagerOptions options_;
  JobObserver* const observer_;  // never null
  EventLog event_log_;
  Committer committer_;
  // The policy in force and the stored version it came from (version 0: the options').
  // Guarded by mu_.
  struct PolicyState {
    Policy policy;
    v1::PolicyVersion version;
  };
  PolicyState policy_;
  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const Policy> policy_snapshot_;  // policy_.policy, for policy()

  mutable std::mutex mu_;
  // Unfinished jobs (and any finished one still live), ordered by the policy's classes.
  JobTable jobs_{[this](const std::string& cls) { return ClassValueLocked(cls); }};
  SubmitLimiter limiter_;   // per tenant: the submit rate
  SubmitKeys submit_keys_;  // (user, idempotency key) -> job, for retried submits
  // Recently finished jobs, until the commit that stored them is durable (finished_jobs.h).
  FinishedJobs finished_{options_.finished_in_memory};
  uint64_t txns_ = 0;                      // Txns committed (numbered)
  std::atomic<uint64_t> durable_txns_{0};  // the newest durable Txn (completions run in order)
  // Preemption reservations of the last pass, given back to the next (sched README).
  ReservedNodes reserved_nodes_;
  sched::UsageLedger ledger_;                      // decayed GPU-seconds per tenant (fair share)
  absl::Time usage_saved_ = absl::InfinitePast();  // when Tick last stored the ledger
  absl::Time retention_checked_ = absl::InfinitePast();  // when Tick last deleted expired jobs
  NodeRegistry nodes_;  // its table under mu_; its links also read by effects after commit
  // ShapeOf(nodes_) as submits check specs against it: a walk over every node's GPUs,
  // kept until a node is loaded or registers (the only changes of inventory or pool), not
  // made again at every submit (at 100,000 nodes, milliseconds under the lock).
  mutable std::optional<ClusterShape> shape_;
  uint64_t next_job_id_ = 1;
  deps::DependentsIndex dependents_;       // who waits for which job (unsettled dependencies)
  std::map<uint64_t, ArrayState> arrays_;  // every array, by id
  std::set<uint64_t> making_;              // arrays with tasks still to be made
  absl::Time arrays_checked_ = absl::InfinitePast();  // when ExpireArraysLocked last looked
  int64_t usage_expired_before_ = 0;  // the rollup's days before this one are deleted

  WatchHub watch_;

  SchedulerDriver driver_;  // last: its thread calls Tick and SchedulePass
};

}  // namespace baton
