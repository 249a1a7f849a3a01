// The node agent: keeps one Connect stream to the coordinator (register, heartbeats,
// reports; reconnecting with backoff), and runs the attempts it is told to launch —
// each node's ranks as children in one process group, output in the attempt's log —
// stopping them on Kill/Preempt (signal, then SIGKILL after the grace period) and on
// lease expiry. Every attempt runs inside the limits its Isolator prepares (cgroups,
// network class, GPU env); its end kills and removes all of it. At start the agent
// re-adopts attempts still running in their cgroups and cleans up after dead ones.
// Every change to an attempt is reported, with its limits and throttling, and
// re-reported at each registration until the coordinator acknowledges its end, and told
// to the AttemptObserver (the node's metrics) as it starts, refreshes and ends. Losing
// the coordinator stops nothing at once: the agent reconnects, and an attempt is stopped
// gracefully only after its own stop_after_disconnect (never, for services).
// The agent decides under its one lock and acts outside it: a Launch is accepted under the
// lock and started (user, directories, cgroups, the network class, fork and exec) by one
// of the launch workers without it; an attempt's end (draining its output, its last
// progress note, the final stats, removing its cgroups and class) and a kill's sweep of
// its cgroup run on the worker without it; periodic stats are read without it. So
// heartbeats and commands never wait behind a launch storm or a slow tc call. Messages to
// the coordinator are queued under the lock and written by the session's writer thread
// without it, so a coordinator slow to read holds up nothing but its own stream (the lease
// ends a stream that stays stuck, and registration resends every attempt's state).
// Thread-safe; one per process. Threads: connection (reads commands), writer (one per
// session), worker (exits, deadlines, heartbeats, lease: it never waits on a slow
// effect), effects (ends, sweeps, stats, progress notes), launch workers, the Reaper's.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "launcher/agent/attempt_observer.h"
#include "launcher/agent/coordinator_link.h"
#include "launcher/agent/effects_queue.h"
#include "launcher/agent/epoch_fence.h"
#include "launcher/agent/exit_plan.h"
#include "launcher/agent/gpu_usage.h"
#include "launcher/agent/isolation/isolator.h"
#include "launcher/agent/job_user.h"
#include "launcher/agent/launch_env.h"
#include "launcher/agent/log_pump.h"
#include "launcher/agent/mps/mps_pools.h"
#include "launcher/agent/outbox.h"
#include "launcher/agent/process.h"
#include "launcher/agent/progress_report.h"
#include "launcher/agent/retention.h"
#include "launcher/agent/stop_plan.h"
#include "proto/agent.pb.h"
#include "proto/tls.h"

namespace baton {

struct AgentOptions {
  std::string node_name;
  std::string coordinator;  // host:port
  std::string data_dir;     // jobs/<job>/<attempt>/ live here; mps/<uuid>/ the MPS pools
  // The MPS control program run for GPUs offered as MPS pools (tests give a fake one).
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string pool;
  std::map<std::string, std::string> labels;
  std::vector<v1::Taint> taints;
  absl::Duration reconnect_max_backoff = absl::Seconds(2);
  absl::Duration local_failure_grace = absl::Seconds(5);  // other local ranks after one fails
  std::string nic;                                        // cluster interface (NCCL_SOCKET_IFNAME)
  std::string mpi_network;                                // CIDR for Open MPI's TCP; "" derives it
  std::string mpirun = "mpirun";                          // the mpirun to use in mpi mode
  bool kill_jobs_on_stop = true;  // false: jobs outlive the agent and are re-adopted
  // Classes treated as inference when a Launch does not say (older coordinators).
  std::vector<std::string> inference_classes = {"inference-critical", "inference"};
  absl::Duration stats_interval = absl::Seconds(5);  // limits and throttling re-reported this often
  // GPU utilisation, sampled every stats_interval and sent with the heartbeats (null:
  // none is sent). Shared so that the options stay copyable.
  std::shared_ptr<GpuUsageSource> gpu_usage;
  int launch_workers = 4;  // attempts started at once (forks, cgroup set-up)
  uint64_t max_log_bytes = LogPump::kDefaultMaxLogBytes;  // per attempt's output log
  // Attempt directories (records, log, work dir) of attempts that ended are removed this
  // long after their last change (checked every 10 minutes); zero keeps them.
  absl::Duration retention = absl::Hours(24 * 30);
  // TLS: the cluster CA and this node's certificate (O=baton-node, CN=node_name), for the
  // coordinator stream; the CA file is also handed to `baton-agent exec` (mpi mode).
  TlsMaterial tls;
  std::string tls_ca_file;
};

class Agent {
 public:
  // `isolator` null: no isolation (mode none). `observer` (may be null) must outlive
  // the Agent. `spawner` (may be null: a Reaper of the agent's own) starts and signals
  // every process.
  // `link` (may be null: gRPC to options.coordinator with options.tls) must outlive it.
  Agent(AgentOptions options, v1::Inventory inventory, Clock* clock,
        std::unique_ptr<Isolator> isolator = nullptr, AttemptObserver* observer = nullptr,
        Spawner* spawner = nullptr, CoordinatorLink* link = nullptr);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // `advertise_address`: host:port of this agent's own service (known once bound).
  // Re-adopts or cleans up the attempts a previous agent left, then connects.
  void Start(const std::string& advertise_address);
  // Stops talking to the coordinator; with kill_jobs_on_stop, ends every attempt first.
  void Stop();

  // Runs `req.command` (sh -c) inside the attempt as a daemon of it — Open MPI's orted,
  // started by mpirun through `baton-agent exec`. Its stdout/stderr go to the given
  // fds (the caller keeps them); `hold_fds` (the read ends) stay open in its keeper so
  // that it outlives an agent restart; `on_exit` runs on the agent's worker thread.
  absl::StatusOr<pid_t> StartExec(const v1::ExecRequest& req, int out_fd, int err_fd,
                                  std::vector<int> hold_fds,
                                  std::function<void(ExitStatus)> on_exit);
  // The exec client of daemon `pid` went away: SIGTERM it, as sshd does. The client is
  // mpirun's launcher on the first node, which goes when mpirun ends, often before the
  // daemon has finished exiting; the job's outcome is mpirun's, so this daemon's end does
  // not fail the node.
  void HangUpExec(pid_t pid);

  // For the log service.
  std::string LogPath(uint64_t job, uint32_t attempt) const;
  // The attempt's files on this node. JobDir (the agent's, mode 0711): the attempt record
  // (attempt_record.h), keepers' exit records, output log (0600) and the mpi hostfile. WorkDir,
  // inside it, belongs to the job's owner (0700): default working dir, TMPDIR, progress note.
  std::string WorkDir(uint64_t job, uint32_t attempt) const;
  // True while the attempt may still write output on this node.
  bool IsLive(uint64_t job, uint32_t attempt) const;
  bool connected() const;

 private:
  using Key = AttemptKey;
  struct Exit {
    Key key;
    pid_t pid;
    ExitStatus status;
    bool unknown = false;  // an adopted process gone without an exit record
  };
  struct Run {
    v1::AttemptReport report;  // the last state, resent until acknowledged
    pid_t pgid = 0;
    std::map<pid_t, uint32_t> ranks;  // live pid -> local rank
    bool failed = false;
    bool stop_ordered = false;
    StopPlan stop;              // its signals and SIGKILL deadline (monotonic clock)
    std::string progress_file;  // the checkpoint library's progress note (rank 0)
    bool adopted = false;       // found running at start: not our children
    bool inference = false;     // isolated as inference: its start and end re-limit training
    // Its GPU's MPS server failed while it ran (NoteMpsFaultsLocked): its failure is that.
    bool mps_fault = false;
    std::vector<std::string> cgroup_procs;  // every process of the attempt joins these
    // mpi mode, nodes after the first: Open MPI's daemon arrives through Exec.
    bool awaiting_exec = false;
    std::shared_ptr<const v1::Launch> launch;  // as accepted (or re-read), for its record
    std::string exec_secret;
    std::vector<std::string> exec_env;
    std::string cwd;
    ProcessUser user;  // every process of the attempt runs as the job's owner
    // Cut off from the coordinator this long, the attempt is stopped gracefully (zero: never).
    absl::Duration stop_after_disconnect;
    absl::Duration grace;  // its eviction grace (the spec's)
    // Exec'ed daemons (never sent SIGUSR1), with what to call when each exits.
    std::map<pid_t, std::function<void(ExitStatus)>> daemons;
    std::map<pid_t, pid_t> keepers;  // rank or daemon pid -> its keeper
    // Its processes are gone; the worker drains its output and reads its last progress
    // note outside the lock, then reports the end (FinishRunLocked, FinishOutsideLock).
    bool finishing = false;
    ProgressNoteState progress;  // what its last progress notes said
    // Accepted, and being started by a launch worker outside the lock: not reported yet
    // (a registration leaves it out; the coordinator resends its Launch, ignored). A
    // stop ordered meanwhile is applied when the launch is committed; exits of processes
    // it started meanwhile wait here until then.
    bool launching = false;
    // Daemons being started by StartExec outside the lock (their exits wait here too).
    int execs_starting = 0;
    std::vector<Exit> early_exits;
    bool live() const {
      return AttemptLive(ranks.size(), daemons.size(), awaiting_exec, execs_starting);
    }
    bool busy() const { return launching || live(); }
  };

  void ConnectionLoop();
  void Session();
  void Handle(const v1::CoordinatorCommand& cmd);
  // Launch, decided under the lock: a new attempt (not a resent or stale launch) is
  // recorded as launching and queued for a launch worker.
  void AcceptLaunchLocked(const v1::Launch& l);
  void LaunchLoop();
  // A launch worker, without the lock: everything the attempt needs before and up to its
  // processes running, into `run` (a fresh one, not the table's). Refusals end as
  // PHASE_REJECTED in `run.report`, with what was made undone.
  void StartAttempt(const v1::Launch& l, Run& run);
  // Under the lock: the started attempt into the table, with what happened meanwhile.
  void CommitLaunchLocked(const v1::Launch& l, Run& started, bool stopped_before_start);
  void StopRun(Key key, Run& run, int signal, absl::Time kill_at, bool ranks_only);
  // Every stop's first step: the attempt is marked stopping, and one with nothing started
  // (its launch still queued; a gang node whose daemon never came) ends here: false then.
  bool BeginStopLocked(Key key, Run& run);
  // Carries out what the attempt's StopPlan answered: the signal, then the kill.
  void CarryOutLocked(Key key, Run& run, const StopPlan::Now& now);
  // Eviction: SIGUSR1 to the ranks once; the kill follows the latest deadline given.
  void PreemptRun(Key key, Run& run, absl::Time deadline);
  // Attempts cut off from the coordinator past their stop_after_disconnect: SIGUSR1 and
  // their grace, once.
  void StopDisconnectedLocked(absl::Duration silent);
  void KillNowLocked(Key key, Run& run);
  void WorkerLoop();
  // The effects thread: carries out what the worker posts to effects_.
  void EffectsLoop();
  // A process's exit: DecideExit (exit_plan.h) on the attempt's view, then carried out.
  void ProcessExitLocked(const Exit& e);
  void FinishRunLocked(Key key, Run& run);
  // Starts a child of the attempt; its exit comes back through the worker thread. `run`
  // is the table's (under the lock) or a launch worker's own.
  absl::StatusOr<pid_t> SpawnInto(Key key, Run& run, SpawnOptions& so);
  // The attempt's record (its launch, group and processes so far) in its job dir, for a
  // restarted agent to re-adopt.
  absl::Status WriteRecord(Key key, const Run& run) const;
  // `ranks`: each local rank's binding (the Isolator's plan).
  void LaunchDirect(const v1::Launch& l, Run& run, RankEnvInput& in, const std::string& cwd,
                    const std::vector<RankPlan>& ranks);
  void LaunchMpi(const v1::Launch& l, Run& run, RankEnvInput& in, const std::string& cwd,
                 const std::vector<RankPlan>& ranks);
  // Queues `msg` for the session's writer (AgentOutbox: dropped when there is no session,
  // the next registration carries every attempt's state).
  void SendLocked(v1::AgentMessage msg);
  void ReportLocked(Run& run);
  void StopAllLocked(const std::string& why, absl::Duration grace);
  // The worker, without the lock: reads the notes (and drains finishing attempts'
  // output), then applies them and reports finished attempts' ends.
  void ReadNotesOutsideLock(const std::vector<NoteRead>& reads);
  std::string JobDir(uint64_t job, uint32_t attempt) const;
  // Copies baton-exec where jobs' users may run it; returns mpirun's plm_rsh_agent.
  std::string StageExecClient() const;
  // Isolation: the request for a launch, the end of an attempt, periodic stats.
  AttemptRequest IsolationRequest(const v1::Launch& l) const;
  // Restarts MPS daemons that died while shares remain (on the stats interval).
  void CheckMpsDaemons();
  // The attempts whose GPU's MPS daemon was found dead (MpsPools::Check): that fault ended
  // every client of the GPU, so each such attempt's end is reported as the fault's.
  void NoteMpsFaultsLocked(const std::vector<Key>& attempts);
  // An attempt's MPS share of its one GPU from the node's pools: the clients' environment.
  // FailedPrecondition when that GPU is not an MPS pool here.
  absl::StatusOr<std::map<std::string, std::string>> AcquireShare(const v1::Launch& l);
  // The attempt's limits and current stats (cgroup reads; no lock needed).
  v1::AttemptIsolation IsolationOf(Key key) const;
  // Every stats interval: stats read without the lock, then reported.
  void RefreshStats();
  void SampleGpus();  // options_.gpu_usage, outside the lock; kept for the heartbeats
  // Attempts whose limits changed (training narrowed or widened around inference) are
  // reported with their new limits; the Isolator is asked without the lock.
  void ReportLimitChanges();
  // Start-up: re-adopt what still runs in its cgroups (agent_recover.cc).
  void RecoverAttempts();
  // An attempt of `pids` (its cgroups' members) as the table will hold it: its record
  // read, its isolation re-applied, its output re-attached (AdoptedProcessesOf decides
  // which process is which). Without the lock. None, and the attempt killed, when it
  // cannot be re-adopted.
  std::optional<Run> AdoptRun(Key key, const std::vector<pid_t>& pids);
  void ReattachOutput(Key key, const v1::Launch& l, Run& run);
  // Adopted attempts' ranks and daemons that are gone (/proc and their keepers' exit
  // records, read without the lock), then applied under it.
  std::vector<Exit> PollAdopted();
  void AdoptedExitLocked(Exit e);
  static std::string PumpGroup(Key key);

  const AgentOptions options_;
  const v1::Inventory inventory_;
  std::string advertise_address_;  // set by Start
  std::string exec_command_;       // mpirun's plm_rsh_agent, set by Start
  Clock* const clock_;
  std::unique_ptr<CoordinatorLink> own_link_;  // when the caller gave none
  CoordinatorLink* const link_;
  std::unique_ptr<Reaper> own_reaper_;  // when the caller gave no spawner
  Spawner* const spawner_;              // own_reaper_ or the caller's: every fork and signal
  std::unique_ptr<Isolator> isolator_;
  // The node's MPS pools (launcher/agent/mps): null when the inventory offers none.
  std::unique_ptr<MpsPools> mps_;
  AttemptObserver* const observer_;      // never null
  EpochFence fence_{options_.data_dir};  // commands of a deposed coordinator are ignored
  LogPump pump_;

  mutable std::mutex mu_;  // attempts_, stream_, timing
  std::map<Key, Run> attempts_;
  std::vector<Key> finishing_;       // attempts whose end the worker reports next
  std::vector<Key> sweeps_;          // attempts whose cgroup the worker kills (Isolator::Kill)
  bool limits_changed_ = false;      // inference started or ended: the worker re-reads limits
  std::deque<v1::Launch> launches_;  // accepted, for the launch workers
  std::condition_variable launch_cv_;
  std::condition_variable launched_cv_;  // a launch was committed (StartExec waits for it)
  CoordinatorStream* stream_ = nullptr;  // the live session's; Cancel only (any thread)
  absl::Duration heartbeat_interval_ = absl::Seconds(1);
  absl::Duration lease_ = absl::Seconds(10);
  // Monotonic ms (an atomic: acks are taken without mu_) of the last command of any kind.
  std::atomic<int64_t> last_contact_mono_ms_{0};
  absl::Time next_heartbeat_ = absl::InfinitePast();  // monotonic; due at once
  absl::Time next_progress_ = absl::InfinitePast();
  absl::Time next_stats_ = absl::InfinitePast();
  std::vector<v1::GpuUtilization> gpu_usage_;  // the last sample, under mu_
  int64_t gpu_usage_ms_ = 0;
  int64_t gpu_usage_sent_ms_ = 0;  // the sample last put in a heartbeat
  bool lease_expired_ = false;
  bool stopping_ = false;

  AgentOutbox outbox_;  // written by the session's writer; its lock is taken after mu_

  std::mutex exits_mu_;
  // Daemons whose exec client went away (HangUpExec). Its own lock: gRPC's cancel
  // callback must never wait for mu_, which is held across reports to the coordinator.
  std::mutex hung_up_mu_;
  std::set<pid_t> hung_up_;
  std::condition_variable exits_cv_;
  std::deque<Exit> exits_;

  EffectsQueue effects_;  // the worker's decisions, for the effects thread

  std::thread connection_;
  std::thread worker_;
  std::thread effector_;
  std::vector<std::thread> launchers_;
  // Retention: removes ended attempts' old directories, outside every lock.
  AttemptDirJanitor janitor_{options_.data_dir, options_.retention, [this] {
                               std::lock_guard<std::mutex> lock(mu_);
                               std::set<Key> keep;
                               for (const auto& [key, run] : attempts_) keep.insert(key);
                               return keep;
                             }};
};

}  // namespace baton
