// Starting and reaping job processes. Spawn starts a child in the given process group
// and cgroups with its binding (CPUs, memory nodes), its stdout/stderr on the attempt's
// log, as the job's user (uid, gid, groups) with no_new_privs, in its directory
// (spawn_child.h), and reports exec failures (ENOENT, EACCES…) synchronously through a
// close-on-exec pipe. With an exit_dir, a keeper process sits between the agent and the
// child: it waits for the child, records how it ended in a file and ends the same way, so
// that an agent restarted meanwhile still learns each process's exit status, and it holds
// the child's output pipes open. The keeper is the small static baton-keeper, started
// without copying the agent's address space (clone with CLONE_VM | CLONE_VFORK, as
// posix_spawn does): a fork of the big, threaded agent cost page-table copies, then
// copy-on-write faults and TLB shootdowns in the agent for as long as the keeper lived.
// Keepers of the default program are forked from one keeper zygote instead, which starts
// that way once (keeper_zygote.h): a fresh exec spent half its CPU in glibc's start-up.
// The Reaper owns waitpid for the whole agent: it is the only place children are reaped.
// Spawn is thread-safe; one Reaper per process.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/rank_bind.h"
#include "launcher/agent/spawn_child.h"

namespace baton {

struct ExitStatus {
  int exit_code = 0;    // valid when term_signal == 0
  int term_signal = 0;  // the signal that ended it, if any
  bool ok() const { return exit_code == 0 && term_signal == 0; }
};

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
  // Where the child runs once in its cgroups (a rank's binding, rank_bind.h): default,
  // every CPU and no memory policy, so that its cgroup's cpuset, not the agent's own
  // affinity, decides.
  ProcessBinding binding;
  // Set: start the child under a keeper (in the child's cgroups, not in its process
  // group, deaf to every signal but SIGKILL) that writes "<exit_dir>/exit.<pid>"
  // ("<exit code> <signal>\n", see ReadExitFile) when the child ends and then exits the
  // same way. The keeper closes every descriptor it does not need.
  std::string exit_dir;
  // Keeper only: a cgroup.procs file it moves into once the child has ended, before it
  // writes the exit record (a lasting cgroup of the node's, CgroupDriver::ExitProcsFile), so
  // that the record's page cache does not keep the attempt's memory cgroup alive after its
  // removal. Empty: it stays in the child's cgroups.
  std::string exit_cgroup_procs;
  // The keeper's program; empty: KeeperProgram().
  std::string keeper_program;
  // Keeper only: descriptors it holds open while the child lives — the read ends of the
  // child's output pipes, so that its writes never fail (EPIPE, SIGPIPE) while the agent
  // that reads them restarts. The child does not inherit them. The caller keeps its own.
  std::vector<int> keep_open_fds;
  // The child (never the keeper, which stays the agent's) becomes this user after joining
  // its cgroups and before chdir and exec. Every child gets no_new_privs, so no setuid
  // binary can give a job more than its owner has.
  // Unset: the agent's own identity (tests, an agent that is not root).
  std::optional<ProcessUser> user;
};

// baton-keeper next to this process's own binary (where the build and the package put
// it), whether or not it is there.
const std::string& KeeperProgram();

// The keeper zygote's pid (keeper_zygote.h; this process's child), 0 while there is none.
// It starts with the first keeper of the default program; BATON_KEEPER_ZYGOTE=0 in the
// environment leaves it out (every keeper exec'd, as before it).
pid_t KeeperZygotePid();

// Whether `pid` runs: false when it is gone or a zombie not reaped yet (a detached
// process's parent is init, which may reap late; /proc/<pid>/stat says Z).
bool ProcessAlive(pid_t pid);

// What a keeper recorded for `pid` in `exit_dir`; nullopt while there is no record.
std::optional<ExitStatus> ReadExitFile(const std::string& exit_dir, pid_t pid);

// Returns the child's pid (the process signals go to). NotFound / PermissionDenied /
// FailedPrecondition naming the program when exec fails; the failed child's pid (already
// exiting with 127) then goes to `failed_child`. With a keeper, `failed_child` and
// `keeper` get the keeper's pid: the agent's own child, the one to wait for.
absl::StatusOr<pid_t> Spawn(const SpawnOptions& options, pid_t* failed_child = nullptr,
                            pid_t* keeper = nullptr);

// What the Agent starts and signals its processes with: the Reaper, or in tests a
// stand-in that delays or records spawns around a real Reaper, or fakes the processes
// altogether (the agent's decisions tested without forking). Thread-safe.
class Spawner {
 public:
  using Callback = std::function<void(pid_t, ExitStatus)>;
  virtual ~Spawner() = default;
  // Spawns and registers `on_exit` (called once, on another thread, when the child ends).
  virtual absl::StatusOr<pid_t> SpawnAndWatch(const SpawnOptions& options, Callback on_exit,
                                              pid_t* keeper = nullptr) = 0;
  // kill(2) for the processes it spawned: `pid` < 0 is a process group, `signal` 0 asks
  // whether it exists. 0, or -1 with errno set.
  virtual int Signal(pid_t pid, int signal);
};

// Waits for the children it spawned, each through a pidfd on one epoll set, and calls
// the callback registered for it (on the reaper's thread). Only this reaper reaps the
// children it started, so nothing races it; destroying it stops its thread (children
// still running are left to their fate and to init).
class Reaper : public Spawner {
 public:
  Reaper();
  ~Reaper() override;
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Spawns and registers `on_exit`; a child that exec could not start is reaped here.
  // With a keeper, its end is the child's (same status) and `on_exit` gets the child's pid.
  absl::StatusOr<pid_t> SpawnAndWatch(const SpawnOptions& options, Callback on_exit,
                                      pid_t* keeper = nullptr) override;

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
