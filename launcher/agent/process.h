// Starting and reaping job processes. Spawn forks, puts the child in the given process
// group, points stdout/stderr at the attempt's log, changes directory and execs — with
// only async-signal-safe calls between fork and exec — and reports exec failures
// (ENOENT, EACCES…) synchronously through a close-on-exec pipe. The Reaper owns waitpid
// for the whole agent: it is the only place children are reaped.
// Spawn is thread-safe; one Reaper per process.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in the child's PATH
  std::vector<std::string> env;   // "NAME=value", the child's whole environment
  std::string cwd;                // must exist
  std::string log_path;           // stdout and stderr, appended (unless output_fd is set)
  int output_fd = -1;             // stdout and stderr go here instead; the caller owns it
  int error_fd = -1;              // stderr alone goes here (with output_fd); caller owns it
  pid_t process_group = 0;        // 0: lead a new group; else join this one
  // Files the child writes its own pid into before exec (cgroup.procs of each
  // hierarchy), so it and all its descendants start inside the job's cgroups.
  std::vector<std::string> cgroup_procs;
};

// NotFound / PermissionDenied / FailedPrecondition naming the program when exec fails;
// the failed child's pid (already exiting with 127) then goes to `failed_child`.
absl::StatusOr<pid_t> Spawn(const SpawnOptions& options, pid_t* failed_child = nullptr);

struct ExitStatus {
  int exit_code = 0;    // valid when term_signal == 0
  int term_signal = 0;  // the signal that ended it, if any
  bool ok() const { return exit_code == 0 && term_signal == 0; }
};

// Waits for the children it spawned, each through a pidfd on one epoll set, and calls
// the callback registered for it (on the reaper's thread). Only this reaper reaps the
// children it started, so nothing races it; destroying it stops its thread (children
// still running are left to their fate and to init).
class Reaper {
 public:
  using Callback = std::function<void(pid_t, ExitStatus)>;
  Reaper();
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Spawns and registers `on_exit`; a child that exec could not start is reaped here.
  absl::StatusOr<pid_t> SpawnAndWatch(const SpawnOptions& options, Callback on_exit);

 private:
  struct Child {
    pid_t pid;
    Callback on_exit;
  };
  void Run();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop
  std::mutex mu_;
  std::map<int, Child> children_;  // by pidfd
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace baton
