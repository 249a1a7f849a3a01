// Agent start-up after a restart: attempts still running in their cgroups are adopted
// (limits re-applied, watched until their ranks are gone, reported at registration);
// cgroups, tc classes and nft rules of attempts that ended meanwhile are removed.
#include <signal.h>

#include <fstream>

#include "launcher/agent/agent.h"
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
  std::string dir = JobDir(key.first, key.second);
  v1::Launch l;
  std::ifstream in(dir + "/launch.pb", std::ios::binary);
  absl::Status adopted = in && l.ParseFromIstream(&in)
                             ? isolator_->Readopt(IsolationRequest(l))
                             : absl::NotFoundError("no launch record in " + dir);
  if (!adopted.ok()) {
    spdlog::warn("job {} attempt {}: cannot re-adopt ({}): killing it", key.first, key.second,
                 adopted.ToString());
    (void)isolator_->Release(key.first, key.second);
    return;
  }
  Run& run = attempts_[key];
  run.adopted = true;
  run.report.set_job_id(key.first);
  run.report.set_attempt(key.second);
  run.report.set_checkpoint_step(-1);
  run.report.set_phase(v1::AttemptReport::PHASE_RUNNING);
  run.progress_file = dir + "/progress.json";
  // The ranks the previous agent started, if still there; else every process.
  std::ifstream ranks(dir + "/ranks");
  pid_t pgid = 0, pid = 0;
  uint32_t rank = 0;
  if (ranks >> pgid) run.pgid = pgid;
  while (ranks >> pid >> rank) {
    if (std::find(pids.begin(), pids.end(), pid) != pids.end()) run.ranks[pid] = rank;
  }
  if (run.ranks.empty()) {
    for (pid_t p : pids) run.ranks[p] = 0;
  }
  ReadProgress(run);
  SetIsolationReportLocked(key, run);
  observer_->OnAttemptStarted(l, run.report.isolation());
  spdlog::info("job {} attempt {}: re-adopted {} running rank(s) from its cgroups", key.first,
               key.second, run.ranks.size());
}

void Agent::PollAdoptedLocked() {
  for (auto& [key, run] : attempts_) {
    if (!run.adopted || run.ranks.empty()) continue;
    std::vector<pid_t> gone;
    for (const auto& [pid, rank] : run.ranks) {
      if (!Alive(pid)) gone.push_back(pid);
    }
    for (pid_t pid : gone) {
      // Not our child: its exit status went to init.
      if (run.report.message().empty()) {
        run.report.set_message("exit status unknown: the agent restarted while the attempt ran");
      }
      ExitStatus st;
      st.exit_code = run.stop_ordered ? 0 : 255;
      st.term_signal = run.stop_ordered ? SIGKILL : 0;
      ProcessExitLocked(Exit{key, pid, st});
    }
  }
}

}  // namespace baton
