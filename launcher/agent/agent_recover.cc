// Agent start-up after a restart: attempts still running in their cgroups are adopted
// (limits re-applied, watched until their ranks are gone, reported at registration);
// cgroups, tc classes and nft rules of attempts that ended meanwhile are removed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "launcher/agent/agent.h"
#include "launcher/agent/attempt_record.h"
#include "launcher/agent/job_files.h"
#include "proto/rpc_util.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

// A pid that is gone or a zombie waiting for init: the process has ended.
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

}  // namespace

void Agent::RecoverAttempts() {
  auto live = isolator_->Recover();
  if (!live.ok()) {
    spdlog::error("re-adopting attempts: {}", live.status().ToString());
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const LiveLeftover& left : *live) AdoptLocked({left.job_id, left.attempt}, left.pids);
}

void Agent::AdoptLocked(Key key, const std::vector<pid_t>& pids) {
  absl::StatusOr<v1::AgentAttemptRecord> record = ReadAttemptRecord(JobDir(key.first, key.second));
  absl::Status adopted =
      record.ok() ? isolator_->Readopt(IsolationRequest(record->launch())) : record.status();
  if (!adopted.ok()) {
    spdlog::warn("job {} attempt {}: cannot re-adopt ({}): killing it", key.first, key.second,
                 adopted.ToString());
    (void)isolator_->Release(key.first, key.second);
    return;
  }
  const v1::Launch& l = record->launch();
  absl::StatusOr<JobUser> user = ResolveJobUser(l.user(), options_.node_name);
  if (!user.ok()) {
    spdlog::warn("job {} attempt {}: cannot re-adopt ({}): killing it", key.first, key.second,
                 user.status().ToString());
    (void)isolator_->Release(key.first, key.second);
    return;
  }
  Run& run = attempts_[key];
  run.launch = std::make_shared<const v1::Launch>(l);
  run.adopted = true;
  run.inference = IsolationRequest(l).inference;
  run.user.uid = user->uid;
  run.user.gid = user->gid;
  run.user.groups = user->gids;
  run.stop_after_disconnect = absl::Milliseconds(l.stop_after_disconnect_ms());
  run.grace = absl::Seconds(l.spec().grace_seconds());
  run.report.set_job_id(key.first);
  run.report.set_attempt(key.second);
  run.report.set_checkpoint_step(-1);
  run.report.set_phase(v1::AttemptReport::PHASE_RUNNING);
  std::string work = WorkDir(key.first, key.second);
  run.progress_file = work + "/progress.json";
  run.exec_secret = l.exec_secret();
  run.cwd = l.spec().working_dir().empty() ? work : l.spec().working_dir();
  ReadProcesses(*record, pids, run);
  if (run.ranks.empty() && run.daemons.empty()) {
    // No record of which process is which: watch them all; signal none on a node whose
    // processes are Open MPI's daemon and its children (mpirun forwards signals).
    bool daemons = l.spec().launch_mode() == v1::LAUNCH_MODE_MPI && l.node_rank() > 0;
    for (pid_t p : pids) {
      if (daemons) {
        run.daemons[p] = nullptr;
      } else {
        run.ranks[p] = 0;
      }
    }
  }
  ReattachOutput(key, l, run);  // its progress note is read by the worker, as for any attempt
  SetIsolationReportLocked(key, run);
  observer_->OnAttemptStarted(l, run.report.isolation());
  spdlog::info("job {} attempt {}: re-adopted {} rank(s) and {} daemon(s) from its cgroups",
               key.first, key.second, run.ranks.size(), run.daemons.size());
}

void Agent::ReadProcesses(const v1::AgentAttemptRecord& record, const std::vector<pid_t>& pids,
                          Run& run) {
  auto running = [&](pid_t pid) {
    return pid > 1 && std::find(pids.begin(), pids.end(), pid) != pids.end();
  };
  // Believed only as far as the cgroups confirm it: the group must be one the attempt's
  // processes are in now (never init's, never ours: kill(-1) or our own group would
  // reach far beyond the attempt), each pid one of its processes.
  run.pgid = BelievableGroup(record.process_group(), pids, getpgrp(), getpgid);
  for (const auto& p : record.processes()) {
    if (!running(p.pid())) continue;
    if (p.daemon()) {
      run.daemons[p.pid()] = nullptr;  // its exec stream went with the previous agent
    } else {
      run.ranks[p.pid()] = p.local_rank();
    }
    if (p.keeper() > 0) run.keepers[p.pid()] = p.keeper();
  }
}

void Agent::ReattachOutput(Key key, const v1::Launch& l, Run& run) {
  // The ranks still write into the pipes the previous agent read (their keepers hold
  // them open): read them again, from the other end's /proc entry.
  uint32_t first_rank = l.node_rank() < static_cast<uint32_t>(l.placement_size())
                            ? l.placement(l.node_rank()).first_rank()
                            : 0;
  bool mpi = l.spec().launch_mode() == v1::LAUNCH_MODE_MPI;
  for (const auto& [pid, rank] : run.ranks) {
    std::string out = "/proc/" + std::to_string(pid) + "/fd/1";
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(out, ec).string();
    if (ec || target.rfind("pipe:", 0) != 0) continue;
    int fd = open(out.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    auto pumped = mpi ? pump_.Adopt(PumpGroup(key), fd, LogPath(key.first, key.second),
                                    LogPump::Mode::kMpiTags)
                      : pump_.Adopt(PumpGroup(key), fd, LogPath(key.first, key.second),
                                    LogPump::Mode::kPrefix,
                                    "[rank " + std::to_string(first_rank + rank) + "] ");
    if (!pumped.ok()) spdlog::warn("job {}: output of {}: {}", key.first, pid, pumped.ToString());
  }
}

std::vector<Agent::Exit> Agent::PollAdopted() {
  struct Probe {
    Key key;
    std::vector<pid_t> pids;         // its ranks and daemons
    std::map<pid_t, pid_t> keepers;  // pid -> keeper
  };
  std::vector<Probe> probes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, run] : attempts_) {
      if (!run.adopted || !run.live()) continue;
      Probe& p = probes.emplace_back(Probe{key, {}, run.keepers});
      for (const auto& [pid, rank] : run.ranks) p.pids.push_back(pid);
      for (const auto& [pid, done] : run.daemons) p.pids.push_back(pid);
    }
  }
  // /proc and the keepers' exit files, read without the lock.
  std::vector<Exit> exits;
  for (const Probe& p : probes) {
    for (pid_t pid : p.pids) {
      if (Alive(pid)) continue;
      // Not our child: its keeper wrote down how it ended.
      std::optional<ExitStatus> recorded = ReadExitFile(JobDir(p.key.first, p.key.second), pid);
      auto keeper = p.keepers.find(pid);
      if (!recorded && keeper != p.keepers.end() && Alive(keeper->second)) continue;  // soon
      Exit& e = exits.emplace_back(Exit{p.key, pid, recorded.value_or(ExitStatus{})});
      e.unknown = !recorded;
    }
  }
  return exits;
}

void Agent::AdoptedExitLocked(Exit e) {
  auto it = attempts_.find(e.key);
  if (it == attempts_.end()) return;
  Run& run = it->second;
  if (!run.ranks.count(e.pid) && !run.daemons.count(e.pid)) return;  // already seen
  if (e.unknown) {
    if (run.report.message().empty()) {
      run.report.set_message("exit status unknown: the agent restarted while the attempt ran");
    }
    e.status.exit_code = run.stop_ordered ? 0 : 255;
    e.status.term_signal = run.stop_ordered ? SIGKILL : 0;
  }
  ProcessExitLocked(e);
}

}  // namespace baton
