// Agent start-up after a restart: attempts still running in their cgroups are adopted
// (limits re-applied, watched until their ranks are gone, reported at registration);
// cgroups, tc classes and nft rules of attempts that ended meanwhile are removed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "launcher/agent/adoption.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/attempt_record.h"
#include "launcher/agent/job_files.h"
#include "proto/rpc_util.h"
#include "spdlog/spdlog.h"

namespace baton {
void Agent::RecoverAttempts() {
  auto live = isolator_->Recover();
  if (!live.ok()) {
    spdlog::error("re-adopting attempts: {}", live.status().ToString());
    return;
  }
  for (const LiveLeftover& left : *live) {
    Key key{left.job_id, left.attempt};
    std::optional<Run> run = AdoptRun(key, left.pids);  // files, cgroups, pipes: no lock
    if (!run) continue;
    observer_->OnAttemptStarted(*run->launch, run->report.isolation());
    spdlog::info("job {} attempt {}: re-adopted {} rank(s) and {} daemon(s) from its cgroups",
                 key.first, key.second, run->ranks.size(), run->daemons.size());
    std::lock_guard<std::mutex> lock(mu_);
    attempts_.insert_or_assign(key, std::move(*run));
  }
}

std::optional<Agent::Run> Agent::AdoptRun(Key key, const std::vector<pid_t>& pids) {
  absl::StatusOr<v1::AgentAttemptRecord> record = ReadAttemptRecord(JobDir(key.first, key.second));
  absl::Status adopted =
      record.ok() ? isolator_->Readopt(IsolationRequest(record->launch())) : record.status();
  absl::StatusOr<JobUser> user = adopted.ok()
                                     ? ResolveJobUser(record->launch().user(), options_.node_name)
                                     : absl::StatusOr<JobUser>(adopted);
  if (!user.ok()) {
    spdlog::warn("job {} attempt {}: cannot re-adopt ({}): killing it", key.first, key.second,
                 user.status().ToString());
    (void)isolator_->Release(key.first, key.second);
    return std::nullopt;
  }
  const v1::Launch& l = record->launch();
  if (l.spec().gpu_share_percent() > 0) {  // its pool's daemon may have gone with the agent
    if (auto env = AcquireShare(l); !env.ok()) {
      spdlog::warn("job {} attempt {}: its MPS share: {}", key.first, key.second,
                   env.status().ToString());
    }
  }
  Run run;
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
  AdoptedProcesses found = AdoptedProcessesOf(*record, pids, getpgrp(), getpgid);
  run.pgid = found.pgid;
  run.ranks = std::move(found.ranks);
  for (pid_t d : found.daemons) run.daemons[d] = nullptr;  // its exec stream went with the agent
  run.keepers = std::move(found.keepers);
  ReattachOutput(key, l, run);  // its progress note is read by the worker, as for any attempt
  *run.report.mutable_isolation() = IsolationOf(key);
  if (run.report.isolation().has_stats()) observer_->OnAttemptStats(run.report.isolation());
  return run;
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
      if (ProcessAlive(pid)) continue;
      // Not our child: its keeper wrote down how it ended.
      std::optional<ExitStatus> recorded = ReadExitFile(JobDir(p.key.first, p.key.second), pid);
      auto keeper = p.keepers.find(pid);
      if (!recorded && keeper != p.keepers.end() && ProcessAlive(keeper->second)) continue;  // soon
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
    e.status = UnknownAdoptedExit(run.stop_ordered);
  }
  ProcessExitLocked(e);
}

}  // namespace baton
