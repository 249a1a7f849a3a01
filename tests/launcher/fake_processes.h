// Processes that are never forked, for the agent's unit tests: a Spawner that records
// what the agent asked to start and how it signalled it, and ends a process when the
// test says (Exit) or when a signal's default action would (SIGKILL always; SIGTERM
// and SIGINT unless the test made its processes ignore them; SIGUSR1/SIGUSR2 never, as
// a rank with the checkpoint library's handler). Pids start above the kernel's largest
// pid_max (2^22), so a signal that ever escaped the fake would reach nothing. Each
// process holds a copy of its output descriptor until it ends, as a child would (the
// agent's log pump sees EOF then). Exits are delivered on a thread of the fake's own,
// as the Reaper does. Spawns of chosen jobs can be held: a launch stuck in its slow
// part. Header-only; thread-safe.
#pragma once

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "launcher/agent/process.h"
#include "tests/launcher/test_util.h"

namespace baton::launcher_testing {

class FakeProcesses : public Spawner {
 public:
  struct Proc {
    pid_t pid = 0;
    pid_t pgid = 0;
    uint64_t job = 0;    // BATON_JOB_ID of its environment (0: none)
    std::string env_of;  // the environment, one "NAME=value" per line
    SpawnOptions options;
    std::vector<int> signals;  // every signal sent to it (directly or to its group)
    bool alive = true;
  };

  FakeProcesses() : delivery_([this] { Deliver(); }) {}
  ~FakeProcesses() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (auto& [pid, p] : procs_) CloseOutput(p);
    }
    cv_.notify_all();
    delivery_.join();
  }
  FakeProcesses(const FakeProcesses&) = delete;
  FakeProcesses& operator=(const FakeProcesses&) = delete;

  absl::StatusOr<pid_t> SpawnAndWatch(const SpawnOptions& options, Callback on_exit,
                                      pid_t* keeper) override {
    if (keeper) *keeper = 0;
    uint64_t job = 0;
    std::string env_of;
    for (const std::string& e : options.env) {
      if (e.rfind("BATON_JOB_ID=", 0) == 0) job = std::strtoull(e.c_str() + 13, nullptr, 10);
      env_of += e + "\n";
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (held_.count(job) && !stopping_holds_) {
      ++waiting_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !held_.count(job) || stopping_; });
      --waiting_;
    }
    if (!options.argv.empty() && missing_.count(options.argv[0])) {
      return absl::NotFoundError(options.argv[0] + ": no such file or directory");
    }
    pid_t pgid = options.process_group;
    if (pgid != 0 && !GroupAliveLocked(pgid)) {
      return absl::PermissionDeniedError("setpgid: no such process group");  // as EPERM
    }
    Proc p;
    p.pid = next_pid_++;
    p.pgid = pgid != 0 ? pgid : p.pid;
    p.job = job;
    p.env_of = std::move(env_of);
    p.options = options;
    // The child's copies of its output: the agent closes its own once this returns.
    p.options.output_fd = options.output_fd >= 0 ? dup(options.output_fd) : -1;
    p.options.error_fd = options.error_fd >= 0 ? dup(options.error_fd) : -1;
    p.options.keep_open_fds.clear();
    pid_t pid = p.pid;
    callbacks_[pid] = std::move(on_exit);
    procs_[pid] = std::move(p);
    cv_.notify_all();
    return pid;
  }

  int Signal(pid_t pid, int signal) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Proc*> targets;
    for (auto& [p, proc] : procs_) {
      if (proc.alive && (pid > 0 ? proc.pid == pid : proc.pgid == -pid)) targets.push_back(&proc);
    }
    if (targets.empty()) {
      errno = ESRCH;
      return -1;
    }
    if (signal == 0) return 0;
    for (Proc* proc : targets) {
      proc->signals.push_back(signal);
      bool ends = signal == SIGKILL ||
                  ((signal == SIGTERM || signal == SIGINT) && !ignore_term_.count(proc->job));
      if (ends) EndLocked(*proc, ExitStatus{0, signal});
    }
    cv_.notify_all();
    return 0;
  }

  // --- the test's side ------------------------------------------------------------------
  // Ends `pid` (alive) as if it exited so; false when it is not alive.
  bool Exit(pid_t pid, ExitStatus status) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = procs_.find(pid);
    if (it == procs_.end() || !it->second.alive) return false;
    EndLocked(it->second, status);
    cv_.notify_all();
    return true;
  }
  // Processes of `job` ignore SIGTERM and SIGINT from now on (SIGKILL still ends them).
  void IgnoreTerm(uint64_t job) {
    std::lock_guard<std::mutex> lock(mu_);
    ignore_term_.insert(job);
  }
  // Spawns for `job` wait until Release(job); `argv[0]` equal to `program` fails as exec's
  // ENOENT would.
  void Hold(uint64_t job) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(job);
  }
  void Release(uint64_t job) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(job);
    cv_.notify_all();
  }
  // Every hold lifted, now and for good (a test leaving: held spawns would hold the
  // agent's launch workers, which it waits for as it stops).
  void ReleaseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    held_.clear();
    stopping_holds_ = true;
    cv_.notify_all();
  }
  void Missing(const std::string& program) {
    std::lock_guard<std::mutex> lock(mu_);
    missing_.insert(program);
  }
  // Until `n` spawns wait at the hold.
  bool WaitForHeld(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return WaitUntil(cv_, lock, [&] { return waiting_ >= n; });
  }
  // Until `job` has `n` live processes; they, in pid order (empty on timeout).
  std::vector<Proc> WaitForLive(uint64_t job, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<Proc> out;
    WaitUntil(cv_, lock, [&] {
      out.clear();
      for (const auto& [pid, p] : procs_) {
        if (p.job == job && p.alive) out.push_back(p);
      }
      return out.size() >= n;
    });
    return out.size() >= n ? out : std::vector<Proc>{};
  }
  // Every process of `job`, alive or not, in pid order.
  std::vector<Proc> Of(uint64_t job) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Proc> out;
    for (const auto& [pid, p] : procs_) {
      if (p.job == job) out.push_back(p);
    }
    return out;
  }
  // Until process `pid` has been sent `signal` `n` times.
  bool WaitForSignal(pid_t pid, int signal, int n = 1) {
    std::unique_lock<std::mutex> lock(mu_);
    return WaitUntil(cv_, lock, [&] { return CountLocked(pid, signal) >= n; });
  }
  int Count(pid_t pid, int signal) {
    std::lock_guard<std::mutex> lock(mu_);
    return CountLocked(pid, signal);
  }

 private:
  static constexpr pid_t kFirstPid = (1 << 22) + 1000;  // above any pid_max

  bool GroupAliveLocked(pid_t pgid) const {
    for (const auto& [pid, p] : procs_) {
      if (p.alive && p.pgid == pgid) return true;
    }
    return false;
  }
  int CountLocked(pid_t pid, int signal) const {
    auto it = procs_.find(pid);
    if (it == procs_.end()) return 0;
    int n = 0;
    for (int s : it->second.signals) n += s == signal;
    return n;
  }
  static void CloseOutput(Proc& p) {
    if (p.options.output_fd >= 0) close(p.options.output_fd);
    if (p.options.error_fd >= 0) close(p.options.error_fd);
    p.options.output_fd = p.options.error_fd = -1;
  }
  void EndLocked(Proc& p, ExitStatus status) {
    p.alive = false;
    CloseOutput(p);
    exits_.emplace_back(p.pid, status);
  }
  void Deliver() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stopping_ || !exits_.empty(); });
      if (exits_.empty()) return;
      auto [pid, status] = exits_.front();
      exits_.pop_front();
      Callback cb = std::move(callbacks_[pid]);
      callbacks_.erase(pid);
      lock.unlock();
      if (cb) cb(pid, status);
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<pid_t, Proc> procs_;
  std::map<pid_t, Callback> callbacks_;
  std::deque<std::pair<pid_t, ExitStatus>> exits_;
  std::set<uint64_t> held_, ignore_term_;
  std::set<std::string> missing_;
  pid_t next_pid_ = kFirstPid;
  int waiting_ = 0;
  bool stopping_ = false;
  bool stopping_holds_ = false;
  std::thread delivery_;  // last: started once the rest is constructed
};

}  // namespace baton::launcher_testing
