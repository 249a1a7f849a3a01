#include "launcher/agent/spawn_child.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;

namespace baton {

std::vector<char*> CStringArray(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

OwnedChildPlan::OwnedChildPlan(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env,
                               const std::vector<std::string>& cgroup_procs) {
  argv_ = CStringArray(argv);
  envp_ = CStringArray(env);
  procs_.reserve(cgroup_procs.size() + 1);
  for (const auto& p : cgroup_procs) procs_.push_back(p.c_str());
  procs_.push_back(nullptr);
  plan.argv = argv_.data();
  plan.envp = envp_.data();
  plan.cgroup_procs = procs_.data();
}

namespace {

// Gives every signal `action` (SIGCHLD keeps its default), then unblocks them all: in this
// order, so that a signal pending from the spawner meets the new disposition.
void ResetSignals(sighandler_t action) {
  for (int s = 1; s < NSIG; ++s) signal(s, s == SIGCHLD ? SIG_DFL : action);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent blocks stop signals; jobs must not
}

// Moves this process into the cgroup whose cgroup.procs file `procs` is.
bool JoinCgroup(const char* procs) {
  int fd = open(procs, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool joined = write(fd, "0", 1) == 1;
  close(fd);
  return joined;
}

// Joins the job's cgroups.
void JoinCgroups(const ChildPlan& p, int msg_fd) {
  for (const char* const* procs = p.cgroup_procs; procs != nullptr && *procs != nullptr; ++procs) {
    if (!JoinCgroup(*procs)) FailStep(msg_fd, kStepCgroups);
  }
}

// Becomes `u` for good (raw syscalls: in a fork of a threaded process glibc's wrappers
// would try to signal the parent's threads). Groups first, the uid last; no_new_privs
// always, so that no setuid program gives the job more than its owner has.
void BecomeUser(const ProcessUser* user, int msg_fd) {
  if (user != nullptr && (user->uid != geteuid() || user->gid != getegid())) {
    if (syscall(SYS_setgroups, user->groups.size(), user->groups.data()) != 0) {
      FailStep(msg_fd, kStepUser);
    }
    if (syscall(SYS_setresgid, user->gid, user->gid, user->gid) != 0) FailStep(msg_fd, kStepUser);
    if (syscall(SYS_setresuid, user->uid, user->uid, user->uid) != 0) FailStep(msg_fd, kStepUser);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailStep(msg_fd, kStepNoNewPrivs);
}

// Closes every descriptor from 3 up except `keep` (sorts it in place).
void CloseAllExcept(int* keep, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j - 1];
      keep[j - 1] = keep[j];
      keep[j] = t;
    }
  }
  unsigned int from = 3;
  for (size_t i = 0; i < n; ++i) {
    if (keep[i] < 3) continue;
    if (static_cast<unsigned int>(keep[i]) > from) {
      syscall(SYS_close_range, from, static_cast<unsigned int>(keep[i]) - 1, 0);
    }
    from = static_cast<unsigned int>(keep[i]) + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0);
}

// Decimal `v` at `out`; returns the characters written.
size_t PutNumber(unsigned long v, char* out) {
  char digits[24];
  size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  for (size_t i = 0; i < d; ++i) out[i] = digits[d - 1 - i];
  return d;
}

// "<prefix><pid>" into `out`.
void ExitPath(const char* prefix, pid_t pid, char* out, size_t size) {
  size_t n = 0;
  while (prefix[n] != 0 && n + 24 < size) {
    out[n] = prefix[n];
    ++n;
  }
  n += PutNumber(static_cast<unsigned long>(pid), out + n);
  out[n] = 0;
}

void SetCloseOnExec(int fd) {
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

struct ChildStart {
  const ChildPlan* plan;
  int msg_fd;
};

int StartChild(void* arg);

}  // namespace

[[noreturn]] void FailStep(int msg_fd, int step) {
  int msg[3] = {kSpawnFailed, step, errno};
  (void)!write(msg_fd, msg, sizeof msg);
  _exit(127);
}

[[noreturn]] void ChildExec(const ChildPlan& p, int msg_fd) {
  ResetSignals(SIG_DFL);
  if (setpgid(0, p.group) != 0) FailStep(msg_fd, kStepSetpgid);
  JoinCgroups(p, msg_fd);
  // The agent's own CPUs are not the job's: its binding, within its cpuset, decides.
  const ProcessBinding unbound;  // empty: allocates nothing
  if (int step = BindThisProcess(p.binding ? *p.binding : unbound); step != 0) {
    FailStep(msg_fd, kStepNoNewPrivs + step);
  }
  BecomeUser(p.user, msg_fd);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(p.out_fd, 1) < 0 ||
      dup2(p.err_fd >= 0 ? p.err_fd : p.out_fd, 2) < 0) {
    FailStep(msg_fd, kStepRedirect);
  }
  if (devnull > 2) close(devnull);  // the job gets stdin, not a second /dev/null descriptor
  if (chdir(p.cwd) != 0) FailStep(msg_fd, kStepChdir);
  // glibc's execvpe searches the caller's PATH, not envp's: make the job's environment
  // the caller's so argv[0] resolves with the PATH the job was given (spec.env). This
  // process is a fork, or the keeper's child, whose keeper never reads its environment.
  environ = const_cast<char**>(p.envp);
  execvpe(p.argv[0], p.argv, p.envp);
  FailStep(msg_fd, kStepExec);
}

namespace {

__attribute__((no_sanitize_address)) int StartChild(void* arg) {
  const auto* start = static_cast<const ChildStart*>(arg);
  ChildExec(*start->plan, start->msg_fd);
}

}  // namespace

[[noreturn]] void KeeperMain(const KeeperPlan& k) {
  ResetSignals(SIG_IGN);  // deaf to all but SIGKILL: only the child's end ends it
  // Out of the agent's process group (its signals are not ours) but in its session: the
  // child joins the attempt's group, which the first rank made in this session.
  setpgid(0, 0);
  JoinCgroups(k.child, k.msg_fd);
  int keep[64];
  size_t nkeep = 0;
  keep[nkeep++] = k.child.out_fd;
  keep[nkeep++] = k.msg_fd;
  if (k.child.err_fd >= 0) keep[nkeep++] = k.child.err_fd;
  for (size_t i = 0; i < k.keep_count && nkeep < 64; ++i) keep[nkeep++] = k.keep_fds[i];
  CloseAllExcept(keep, nkeep);  // the agent's sockets and files are not ours to hold
  // Held here, never seen by the child: it execs with 0, 1 and 2 only, and the status
  // pipe's EOF tells the spawner that it did.
  for (size_t i = 0; i < nkeep; ++i) SetCloseOnExec(keep[i]);
  // The child runs in the keeper's memory on a stack of its own until it execs, the keeper
  // waiting meanwhile (CLONE_VM | CLONE_VFORK): nothing to copy and nothing to fault back.
  // What it changes there (errno, environ) the keeper no longer reads; its descriptors,
  // signal handlers, directory and credentials are its own.
  static char child_stack[64 * 1024] __attribute__((aligned(64)));
  // The child starts in the cgroups the keeper joined above: nothing to join again.
  ChildPlan child_plan = k.child;
  child_plan.cgroup_procs = nullptr;
  ChildStart start{&child_plan, k.msg_fd};
  pid_t child =
      clone(StartChild, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
  if (child < 0) FailStep(k.msg_fd, kStepForkChild);
  pid_t group = k.child.group;
  setpgid(child, group == 0 ? child : group);  // before anyone hears the pid
  int msg[3] = {kSpawnChildPid, child, 0};
  (void)!write(k.msg_fd, msg, sizeof msg);
  close(k.msg_fd);
  close(k.child.out_fd);
  if (k.child.err_fd >= 0) close(k.child.err_fd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) _exit(255);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  // Best effort: else the record's page cache pins the attempt's memory cgroup.
  if (k.exit_cgroup_procs != nullptr) (void)JoinCgroup(k.exit_cgroup_procs);
  char path[4096];
  ExitPath(k.exit_prefix, child, path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    char text[64];
    size_t n = PutNumber(static_cast<unsigned long>(code), text);
    text[n++] = ' ';
    n += PutNumber(static_cast<unsigned long>(sig), text + n);
    text[n++] = '\n';
    (void)!write(fd, text, n);
    close(fd);
  }
  if (sig == 0) _exit(code);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // the child's crash is not the keeper's
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

}  // namespace baton
