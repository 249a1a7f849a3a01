// Agent: starting attempts — direct mode (the node's ranks with torchrun-style env) and
// mpi mode (mpirun on the gang's first node; the other nodes wait for Open MPI's daemon
// to arrive through Exec) — and running those exec'ed daemons.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/daemon.h"
#include "common/net.h"
#include "common/status.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/attempt_record.h"
#include "launcher/agent/launch_env.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// Compares in time independent of where they differ: the secret is probed over the network.
bool SameSecret(const std::string& given, const std::string& held) {
  if (given.size() != held.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < held.size(); ++i) diff |= given[i] ^ held[i];
  return diff == 0;
}

constexpr const char* kInheritedEnv[] = {"PATH", "HOME", "LANG",    "LC_ALL", "TMPDIR",
                                         "TZ",   "USER", "LOGNAME", "SHELL",  "LD_LIBRARY_PATH"};

// The attempt's directories: the agent's own (0711: its files are reached by exact name,
// never listed) and the job's work dir inside it, made here and then given to the job's
// owner (0700, with its TMPDIR). Nothing of the job's runs yet: no link can be planted.
absl::Status MakeAttemptDirs(const std::string& dir, const std::string& work, const JobUser& u) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError("create " + dir + ": " + ec.message());
  std::string parent = std::filesystem::path(dir).parent_path().string();
  if (chmod(parent.c_str(), 0711) != 0 || chmod(dir.c_str(), 0711) != 0) {
    return ErrnoToStatus(errno, "chmod " + dir);
  }
  for (const std::string& d : {work, work + "/tmp"}) {
    if (mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoToStatus(errno, "mkdir " + d);
    if (lchown(d.c_str(), u.uid, u.gid) != 0) {
      return ErrnoToStatus(errno,
                           "give " + d + " to user " + u.name +
                               " (an agent that is not root runs jobs of its own user only)");
    }
  }
  return absl::OkStatus();
}

ProcessUser AsProcessUser(const JobUser& u) {
  ProcessUser p;
  p.uid = u.uid;
  p.gid = u.gid;
  p.groups = u.gids;
  return p;
}

// Who the job is, for its environment: its user's names and home, not the agent's.
void SetUserEnv(const JobUser& u, const std::string& work,
                std::map<std::string, std::string>* env) {
  (*env)["USER"] = u.name;
  (*env)["LOGNAME"] = u.name;
  (*env)["HOME"] = u.home.empty() ? work : u.home;
  if (!u.shell.empty()) (*env)["SHELL"] = u.shell;
}

std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (const char* name : kInheritedEnv) {
    if (const char* v = getenv(name)) env[name] = v;
  }
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
  return env;
}

}  // namespace

std::string Agent::StageExecClient() const {
  // What mpirun runs to start its daemons, as the job's user: the static baton-exec next
  // to this binary (it starts in a few ms), copied where every user may run it (the agent
  // may live in a private build tree); else `baton-agent exec`.
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "baton-agent exec";
  auto fast = self.parent_path() / "baton-exec";
  if (access(fast.c_str(), X_OK) != 0) return self.string() + " exec";
  std::string bin = options_.data_dir + "/bin", staged = bin + "/baton-exec";
  std::filesystem::create_directories(bin, ec);
  std::filesystem::copy_file(fast, staged + ".tmp",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec || chmod(bin.c_str(), 0755) != 0 || chmod((staged + ".tmp").c_str(), 0755) != 0 ||
      rename((staged + ".tmp").c_str(), staged.c_str()) != 0) {
    spdlog::warn("cannot stage baton-exec in {}: jobs' mpirun runs {}", bin, fast.string());
    return fast.string();
  }
  return staged;
}

namespace {

// Direct mode: rank 0 (on the gang's first node) listens on MASTER_PORT for the others'
// rendezvous. The coordinator keeps it unique among this node's attempts; anything else
// holding it would fail the job later with an obscure error, so say it now.
absl::Status CheckMasterPort(const v1::Launch& l) {
  if (l.spec().launch_mode() == v1::LAUNCH_MODE_MPI || l.node_rank() != 0 || l.master_port() == 0) {
    return absl::OkStatus();
  }
  absl::Status free = CheckTcpPortFree(static_cast<int>(l.master_port()));
  if (free.ok()) return free;
  return absl::FailedPreconditionError("MASTER_PORT: " + std::string(free.message()) +
                                       " (by a process outside baton's attempts)");
}

}  // namespace

void Agent::AcceptLaunchLocked(const v1::Launch& l) {
  Key key{l.job_id(), l.attempt()};
  if (attempts_.count(key)) return;  // a resent launch for an attempt we already run
  for (const auto& [k, run] : attempts_) {
    if (k.first == l.job_id() && k.second > l.attempt()) return;  // stale
  }
  Run& run = attempts_[key];
  run.launching = true;
  run.report.set_job_id(l.job_id());
  run.report.set_attempt(l.attempt());
  run.report.set_checkpoint_step(-1);
  launches_.push_back(l);
  launch_cv_.notify_one();
}

void Agent::LaunchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    launch_cv_.wait(lock, [this] { return stopping_ || !launches_.empty(); });
    if (launches_.empty()) return;  // stopping
    v1::Launch l = std::move(launches_.front());
    launches_.pop_front();
    auto it = attempts_.find({l.job_id(), l.attempt()});
    if (it == attempts_.end() || !it->second.launching) continue;
    Run started;
    started.report = it->second.report;
    // Stopped while queued (a cancel, the agent stopping): nothing is started at all.
    bool stopped = it->second.stop_ordered || stopping_;
    lock.unlock();
    if (!stopped) StartAttempt(l, started);
    lock.lock();
    CommitLaunchLocked(l, started, stopped);
  }
}

void Agent::StartAttempt(const v1::Launch& l, Run& run) {
  Key key{l.job_id(), l.attempt()};
  std::string dir = JobDir(l.job_id(), l.attempt());
  std::string work = WorkDir(l.job_id(), l.attempt());
  std::string error;
  absl::StatusOr<JobUser> user = ResolveJobUser(l.user(), options_.node_name);
  if (!user.ok()) {
    error = std::string(user.status().message());
  } else if (user->uid == 0 && !l.allow_root()) {
    error = "the job's user " + user->name +
            " is root, and the policy does not allow root jobs in tenant " + l.spec().tenant() +
            " (tenants[].allow_root)";
  } else if (absl::Status s = MakeAttemptDirs(dir, work, *user); !s.ok()) {
    error = std::string(s.message());
  } else if (absl::Status s = CheckMasterPort(l); !s.ok()) {
    error = std::string(s.message());
  } else {
    run.user = AsProcessUser(*user);
    run.stop_after_disconnect = absl::Milliseconds(l.stop_after_disconnect_ms());
    run.grace = absl::Seconds(l.spec().grace_seconds());
  }
  // Limits first: every process of the attempt (ranks, mpirun, exec'ed daemons) joins
  // its cgroups before it execs.
  absl::StatusOr<PreparedAttempt> prepared = absl::UnknownError("not prepared");
  if (error.empty()) {
    prepared = isolator_->Prepare(IsolationRequest(l));
    if (!prepared.ok()) error = "isolation: " + prepared.status().ToString();
  }
  // An MPS share: its pool's daemon runs, with the server's limits, before a rank starts.
  std::map<std::string, std::string> mps_env;
  if (error.empty() && l.spec().gpu_share_percent() > 0) {
    auto env = AcquireShare(l);
    if (env.ok()) {
      mps_env = std::move(*env);
    } else {
      error = "MPS: " + std::string(env.status().message());
    }
  }
  if (error.empty()) {
    run.cgroup_procs = prepared->procs_files;
    *run.report.mutable_isolation() = IsolationOf(key);
    // What a restarted agent needs to re-adopt the attempt (it holds the exec secret); its
    // processes are added once they run.
    run.launch = std::make_shared<const v1::Launch>(l);
    if (auto s = WriteRecord(key, run); !s.ok()) error = std::string(s.message());
  }
  if (error.empty()) {
    run.cwd = l.spec().working_dir().empty() ? work : l.spec().working_dir();
    RankEnvInput in;
    in.launch = &l;
    in.node_name = options_.node_name;
    in.job_dir = work;
    in.progress_file = work + "/progress.json";
    in.inherited = InheritedEnv();
    SetUserEnv(*user, work, &in.inherited);
    in.nic = options_.nic;
    in.isolation_env = prepared->env;
    for (auto& [k, v] : mps_env) in.isolation_env[k] = v;
    for (const auto& g : inventory_.gpus()) {
      in.known_gpu_ids.push_back(g.uuid());
      in.gpu_mig_profiles[g.uuid()] = g.mig_profile();
    }
    run.progress_file = in.progress_file;
    if (l.spec().launch_mode() == v1::LAUNCH_MODE_MPI) {
      LaunchMpi(l, run, in, run.cwd, prepared->ranks);
    } else {
      LaunchDirect(l, run, in, run.cwd, prepared->ranks);
    }
    error = run.report.message();
  }
  if (!error.empty()) {
    spdlog::warn("job {} attempt {}: launch refused: {}", l.job_id(), l.attempt(), error);
    run.failed = true;
    run.awaiting_exec = false;
    run.report.set_phase(v1::AttemptReport::PHASE_REJECTED);
    run.report.set_exit_code(127);
    run.report.set_message(error);
    if (run.pgid) spawner_->Signal(-run.pgid, SIGKILL);
    (void)isolator_->Kill(l.job_id(), l.attempt());
    // Else once the spawned ranks are reaped (FinishRunLocked).
    if (!run.live()) {
      (void)isolator_->Release(l.job_id(), l.attempt());
      if (mps_) (void)mps_->Release(l.job_id(), l.attempt());
    }
    return;
  }
  if (auto s = WriteRecord(key, run); !s.ok()) {
    spdlog::warn("job {} attempt {}: {}", key.first, key.second, s.ToString());
  }
  run.report.set_phase(v1::AttemptReport::PHASE_RUNNING);
}

void Agent::CommitLaunchLocked(const v1::Launch& l, Run& started, bool stopped_before_start) {
  Key key{l.job_id(), l.attempt()};
  auto it = attempts_.find(key);
  if (it == attempts_.end()) return;  // never: a launching attempt is not erased
  Run& run = it->second;
  run.launching = false;
  run.inference = IsolationRequest(l).inference;
  launched_cv_.notify_all();
  std::vector<Exit> early = std::move(run.early_exits);
  run.early_exits.clear();
  if (stopped_before_start) {
    spdlog::info("job {} attempt {}: stopped before it started", key.first, key.second);
    FinishRunLocked(key, run);  // reported as exited, killed
    return;
  }
  // What the launch made; what happened meanwhile (a stop, its message) stays the run's.
  run.pgid = started.pgid;
  run.ranks = std::move(started.ranks);
  run.keepers = std::move(started.keepers);
  run.cgroup_procs = std::move(started.cgroup_procs);
  run.user = std::move(started.user);
  run.launch = std::move(started.launch);
  run.exec_secret = std::move(started.exec_secret);
  run.exec_env = std::move(started.exec_env);
  run.awaiting_exec = started.awaiting_exec;
  run.cwd = std::move(started.cwd);
  run.progress_file = std::move(started.progress_file);
  run.stop_after_disconnect = started.stop_after_disconnect;
  run.grace = started.grace;
  run.failed = started.failed;
  if (started.report.has_isolation()) {
    *run.report.mutable_isolation() = started.report.isolation();
  }
  run.report.set_phase(started.report.phase());
  bool spawned = run.live();
  if (started.report.phase() == v1::AttemptReport::PHASE_REJECTED) {
    run.report.set_exit_code(started.report.exit_code());
    run.report.set_message(started.report.message());
    for (const Exit& e : early) ProcessExitLocked(e);
    if (!spawned) ReportLocked(run);   // else once the spawned ranks are reaped
    limits_changed_ |= run.inference;  // its isolation, set up and undone
    return;
  }
  observer_->OnAttemptStarted(l, run.report.isolation());
  spdlog::info("job {} attempt {}: started {} process(es){}, group {}", l.job_id(), l.attempt(),
               run.ranks.size(), run.awaiting_exec ? " (awaiting mpirun's daemon)" : "", run.pgid);
  if (run.stop_ordered) {
    // Told to stop while it started: nothing has run long enough to lose.
    spdlog::info("job {} attempt {}: stopped while starting: SIGKILL", key.first, key.second);
    run.awaiting_exec = false;
    KillNowLocked(key, run);
  } else {
    ReportLocked(run);
  }
  limits_changed_ |= run.inference;  // training narrowed for an inference arrival
  for (const Exit& e : early) ProcessExitLocked(e);
  auto again = attempts_.find(key);
  if (again != attempts_.end() && !again->second.live() && !again->second.finishing) {
    FinishRunLocked(key, again->second);  // an mpi node stopped before its daemon came
  }
}

absl::Status Agent::WriteRecord(Key key, const Run& run) const {
  // What a restarted agent re-adopts (agent_recover.cc). A page-cache write of a small
  // file, not synced (it ends with the boot): cheap enough under the lock, which orders
  // the launch's and each exec'ed daemon's writes.
  if (!run.launch) return absl::OkStatus();  // never: every started attempt has its launch
  v1::AgentAttemptRecord record;
  *record.mutable_launch() = *run.launch;
  record.set_process_group(run.pgid);
  auto add = [&](pid_t pid, bool daemon, uint32_t rank) {
    v1::AgentAttemptRecord::Process* p = record.add_processes();
    p->set_pid(pid);
    p->set_daemon(daemon);
    p->set_local_rank(rank);
    auto it = run.keepers.find(pid);
    p->set_keeper(it == run.keepers.end() ? 0 : it->second);
  };
  for (const auto& [pid, rank] : run.ranks) add(pid, false, rank);
  for (const auto& [pid, done] : run.daemons) add(pid, true, 0);
  return WriteAttemptRecord(JobDir(key.first, key.second), record);
}

absl::StatusOr<pid_t> Agent::SpawnInto(Key key, Run& run, SpawnOptions& so) {
  so.cgroup_procs = run.cgroup_procs;
  so.exit_cgroup_procs = isolator_->ExitProcsFile();
  so.user = run.user;
  // A keeper records each process's end, so that a restarted agent learns it too.
  so.exit_dir = JobDir(key.first, key.second);
  auto on_exit = [this, key](pid_t pid, ExitStatus st) {
    {
      std::lock_guard<std::mutex> lock(exits_mu_);
      exits_.push_back(Exit{key, pid, st});
    }
    exits_cv_.notify_all();
  };
  pid_t keeper = 0;
  absl::StatusOr<pid_t> pid;
  for (int tries = 0;; ++tries) {
    // Every process of the attempt's group may have ended already (a quick rank, done
    // while the next one starts): joining it then fails, and this one starts a new group.
    if (run.pgid != 0 && spawner_->Signal(-run.pgid, 0) != 0 && errno == ESRCH) run.pgid = 0;
    so.process_group = run.pgid;
    pid = spawner_->SpawnAndWatch(so, on_exit, &keeper);
    if (pid.ok() || so.process_group == 0 || tries > 0 || !absl::IsPermissionDenied(pid.status())) {
      break;
    }
  }
  if (pid.ok() && run.pgid == 0) run.pgid = *pid;
  if (pid.ok() && keeper) run.keepers[*pid] = keeper;
  return pid;
}

void Agent::LaunchDirect(const v1::Launch& l, Run& run, RankEnvInput& in, const std::string& cwd,
                         const std::vector<RankPlan>& ranks) {
  Key key{l.job_id(), l.attempt()};
  for (uint32_t r = 0; r < l.spec().ranks_per_node(); ++r) {
    in.local_rank = r;
    auto env = BuildRankEnv(in);
    if (!env.ok()) return run.report.set_message(std::string(env.status().message()));
    SpawnOptions so;
    so.argv.assign(l.spec().command().begin(), l.spec().command().end());
    so.env = std::move(*env);
    so.cwd = cwd;
    if (r < ranks.size()) so.binding = ranks[r].bind;
    so.log_path = LogPath(l.job_id(), l.attempt());
    uint32_t rank = l.placement(l.node_rank()).first_rank() + r;
    int reader = -1;
    auto out = pump_.Open(PumpGroup(key), so.log_path, LogPump::Mode::kPrefix,
                          "[rank " + std::to_string(rank) + "] ", &reader);
    if (!out.ok()) return run.report.set_message(std::string(out.status().message()));
    so.output_fd = *out;
    so.keep_open_fds = {reader};
    auto pid = SpawnInto(key, run, so);
    close(so.output_fd);  // the child holds its copy; EOF comes when it and its heirs exit
    close(reader);        // its keeper holds one
    if (!pid.ok()) return run.report.set_message(std::string(pid.status().message()));
    run.ranks[*pid] = r;
  }
}

void Agent::LaunchMpi(const v1::Launch& l, Run& run, RankEnvInput& in, const std::string& cwd,
                      const std::vector<RankPlan>& ranks) {
  Key key{l.job_id(), l.attempt()};
  auto env = BuildRankEnv(in);
  if (!env.ok()) return run.report.set_message(std::string(env.status().message()));
  // Daemons binding nothing need no shared hwloc topology, whose shared-memory mapping
  // crashed orted when several "nodes" share a machine. Binding is the cgroups' job, and
  // each rank's own (`baton-exec --bind-rank`), from this node's plan: mpirun's ranks
  // inherit mpirun's environment here, and the daemon's (exec_env) on the other nodes.
  env->push_back("OMPI_MCA_rtc=^hwloc");
  std::vector<ProcessBinding> bindings;
  for (const RankPlan& p : ranks) bindings.push_back(p.bind);
  env->push_back(std::string(kBindingsEnv) + "=" + EncodeBindings(bindings));
  env->push_back(std::string(kBindExecEnv) + "=" + exec_command_);
  run.exec_secret = l.exec_secret();
  if (l.node_rank() > 0) {
    // Nothing to start: mpirun on the first node will exec Open MPI's daemon here.
    run.awaiting_exec = true;
    run.exec_env = std::move(*env);
    return;
  }
  std::string hosts;
  for (int i = 0; i < l.placement_size() && i < l.agent_addresses_size(); ++i) {
    hosts += (hosts.empty() ? "" : ",") + l.placement(i).address() + "=" + l.placement(i).node() +
             "@" + l.agent_addresses(i);
  }
  env->push_back("BATON_EXEC_HOSTS=" + hosts);
  // The exec client checks that each agent it hands the secret to holds that node's
  // certificate.
  if (options_.tls.insecure) {
    env->push_back("BATON_EXEC_INSECURE=1");
  } else {
    env->push_back("BATON_EXEC_CA=" + options_.tls_ca_file);
  }
  env->push_back("BATON_EXEC_SECRET=" + l.exec_secret());
  std::string hostfile = JobDir(l.job_id(), l.attempt()) + "/hostfile";  // mpirun reads it
  if (auto s = WriteFileAtomically(hostfile, MpiHostfile(l), 0644); !s.ok()) {
    return run.report.set_message(std::string(s.message()));
  }
  MpirunInput mi;
  mi.launch = &l;
  mi.mpirun = options_.mpirun;
  mi.exec_command = exec_command_;
  mi.hostfile = hostfile;
  mi.network = options_.mpi_network.empty() ? DefaultMpiNetwork(l.placement(0).address())
                                            : options_.mpi_network;
  mi.as_root = run.user.uid == 0;
  mi.rank_prefix = BindRankPrefix();
  SpawnOptions so;
  so.argv = MpirunArgv(mi);
  so.env = std::move(*env);
  so.cwd = cwd;
  so.log_path = LogPath(l.job_id(), l.attempt());
  int reader = -1;
  auto out = pump_.Open(PumpGroup(key), so.log_path, LogPump::Mode::kMpiTags, "", &reader);
  if (!out.ok()) return run.report.set_message(std::string(out.status().message()));
  so.output_fd = *out;
  so.keep_open_fds = {reader};
  auto pid = SpawnInto(key, run, so);
  close(so.output_fd);
  close(reader);
  if (!pid.ok()) return run.report.set_message(std::string(pid.status().message()));
  run.ranks[*pid] = 0;  // mpirun: the one process "checkpoint now" goes to on this node
}

absl::StatusOr<pid_t> Agent::StartExec(const v1::ExecRequest& req, int out_fd, int err_fd,
                                       std::vector<int> hold_fds,
                                       std::function<void(ExitStatus)> on_exit) {
  std::unique_lock<std::mutex> lock(mu_);
  Key key{req.job_id(), req.attempt()};
  // mpirun on the gang's first node may exec its daemon while this node's launch of the
  // attempt is still being started by a launch worker.
  launched_cv_.wait_for(lock, std::chrono::seconds(30), [&] {
    auto it = attempts_.find(key);
    return stopping_ || it == attempts_.end() || !it->second.launching;
  });
  auto it = attempts_.find(key);
  std::string which =
      "attempt " + std::to_string(req.attempt()) + " of job " + std::to_string(req.job_id());
  if (it == attempts_.end() || it->second.exec_secret.empty()) {
    return absl::FailedPreconditionError(which + " does not run on node " + options_.node_name);
  }
  Run& run = it->second;
  if (!SameSecret(req.secret(), run.exec_secret)) {
    return absl::PermissionDeniedError("wrong exec secret for " + which);
  }
  if (!run.live() || run.stop_ordered) {
    return absl::FailedPreconditionError(which + " has ended on node " + options_.node_name);
  }
  SpawnOptions so;
  so.argv = {"/bin/sh", "-c", req.command()};
  so.env = run.exec_env;
  so.cwd = run.cwd;
  so.output_fd = out_fd;
  so.error_fd = err_fd;
  so.keep_open_fds = std::move(hold_fds);
  // The fork and exec run without the lock, into a scratch Run; the attempt counts as live
  // meanwhile, and exits of processes it does not know yet wait for the commit.
  Run scratch;
  scratch.pgid = run.pgid;
  scratch.cgroup_procs = run.cgroup_procs;
  scratch.user = run.user;
  ++run.execs_starting;
  lock.unlock();
  auto pid = SpawnInto(key, scratch, so);
  lock.lock();
  it = attempts_.find(key);
  if (it == attempts_.end()) {  // never: a live attempt is not erased
    if (pid.ok()) spawner_->Signal(*pid, SIGKILL);
    return absl::FailedPreconditionError(which + " has ended on node " + options_.node_name);
  }
  Run& after = it->second;
  --after.execs_starting;
  if (pid.ok()) {
    after.daemons[*pid] = std::move(on_exit);
    after.keepers.insert(scratch.keepers.begin(), scratch.keepers.end());
    if (scratch.pgid != after.pgid) after.pgid = scratch.pgid;  // the group it started
    after.awaiting_exec = false;
    if (auto s = WriteRecord(key, after); !s.ok()) {
      spdlog::warn("job {} attempt {}: {}", key.first, key.second, s.ToString());
    }
    spdlog::info("job {} attempt {}: exec'ed daemon {}", req.job_id(), req.attempt(), *pid);
    if (after.stop_ordered) {
      spdlog::info("job {} attempt {}: stopped while its daemon started: SIGKILL", key.first,
                   key.second);
      KillNowLocked(key, after);
    }
  }
  // Exits that came while it started, of processes known now.
  std::vector<Exit> early;
  for (auto e = after.early_exits.begin(); e != after.early_exits.end();) {
    if (after.daemons.count(e->pid) || after.ranks.count(e->pid) || after.execs_starting == 0) {
      early.push_back(*e);
      e = after.early_exits.erase(e);
    } else {
      ++e;
    }
  }
  for (const Exit& e : early) ProcessExitLocked(e);
  auto again = attempts_.find(key);
  if (again != attempts_.end() && !again->second.live() && !again->second.finishing) {
    FinishRunLocked(key, again->second);  // stopped meanwhile, and nothing runs
  }
  return pid;
}

void Agent::HangUpExec(pid_t pid) {
  {
    std::lock_guard<std::mutex> lock(hung_up_mu_);
    hung_up_.insert(pid);
  }
  spawner_->Signal(pid, SIGTERM);  // not yet reaped (its exec stream is still open), so still ours
}

}  // namespace baton
