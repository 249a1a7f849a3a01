// What a process does between fork and exec to become one of a job's processes, and the
// keeper that sits between the agent and it (process.h). Async-signal-safe and libc only
// (but for building a plan, before the fork), so that it runs in a forked child and in the
// small static baton-keeper, which the agent starts without copying its own address space
// (process.cc) and which starts the job's process the same way from its own, tiny one.
// Everything a plan points to is the caller's.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent/rank_bind.h"

namespace baton {

// The identity a child takes before exec (the job's owner, job_user.h).
struct ProcessUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
};

// Messages from a child or keeper to the spawning process over its status pipe, three
// ints each (one atomic pipe write): {kSpawnChildPid, pid, 0} or {kSpawnFailed, step, errno}.
enum SpawnMsgKind : int { kSpawnChildPid = 1, kSpawnFailed = 2 };

// The step a failure names (process.cc words it for the caller).
enum SpawnStep : int {
  kStepSetpgid = 1,
  kStepCgroups = 2,
  kStepRedirect = 3,
  kStepChdir = 4,
  kStepExec = 5,
  kStepForkChild = 6,
  kStepUser = 7,
  kStepNoNewPrivs = 8,
  kStepCpus = 9,  // 8 + BindThisProcess's step
  kStepMems = 10,
  kStepExecKeeper = 11,
  kStepKeeperArgs = 12,
};

// A child's plan, in memory the child sees as it is (a fork's copy, or the keeper's own).
struct ChildPlan {
  char* const* argv = nullptr;  // null-terminated; argv[0] is looked up in envp's PATH
  char* const* envp = nullptr;  // null-terminated: the whole environment
  const char* cwd = nullptr;
  int out_fd = -1;  // stdout, and stderr unless err_fd is set
  int err_fd = -1;
  pid_t group = 0;  // the process group to join; 0: lead a new one
  // Null-terminated: cgroup.procs files the child writes itself into, so that it and all
  // its descendants start inside the job's cgroups.
  const char* const* cgroup_procs = nullptr;
  const ProcessBinding* binding = nullptr;  // null: every CPU, no memory policy
  const ProcessUser* user = nullptr;        // null: stay who we are
};

// The null-terminated array of `v`'s strings that exec takes; they stay v's.
std::vector<char*> CStringArray(const std::vector<std::string>& v);

// A child's plan with the arrays it points into, built from strings before the fork or
// clone (the only part here that allocates); the strings and binding stay the caller's.
struct OwnedChildPlan {
  OwnedChildPlan(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                 const std::vector<std::string>& cgroup_procs);
  OwnedChildPlan(const OwnedChildPlan&) = delete;
  OwnedChildPlan& operator=(const OwnedChildPlan&) = delete;

  ChildPlan plan;  // argv, envp and cgroup_procs set; the rest is the caller's to fill

 private:
  std::vector<char*> argv_, envp_;
  std::vector<const char*> procs_;
};

// The keeper's plan: the child's, the status pipe, what it holds open while the child lives
// (it closes every other descriptor), and where it records the child's end.
struct KeeperPlan {
  ChildPlan child;
  int msg_fd = -1;
  const int* keep_fds = nullptr;
  size_t keep_count = 0;              // at most 60
  const char* exit_prefix = nullptr;  // "<exit_dir>/exit.": the record is "<prefix><pid>"
  // Null, or a cgroup.procs file the keeper moves into once its child has ended, before it
  // writes the record: the record's page cache is then charged to that (lasting) memory
  // cgroup, not the attempt's, which would otherwise outlive its removal as a dying cgroup
  // for as long as the record stays cached (process.h, SpawnOptions::exit_cgroup_procs).
  const char* exit_cgroup_procs = nullptr;
};

// Reports `step` with errno on `msg_fd` and exits 127.
[[noreturn]] void FailStep(int msg_fd, int step);

// Becomes the job's process: unblocks and defaults every signal, joins the process group
// and cgroups, binds, becomes the user (with no_new_privs always), points 0/1/2 at
// /dev/null and the output, changes directory and execs. Failures go to `msg_fd`, which
// must be close-on-exec, so that its EOF tells the spawner that exec happened.
[[noreturn]] void ChildExec(const ChildPlan& plan, int msg_fd);

// The keeper: deaf to every signal but SIGKILL, in the job's cgroups but a process group of
// its own, it starts the child (ChildExec), reports its pid, waits for it, writes
// "<exit code> <signal>\n" to "<exit_prefix><pid>" and ends the same way the child did.
[[noreturn]] void KeeperMain(const KeeperPlan& plan);

}  // namespace baton
