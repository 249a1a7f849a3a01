#include "launcher/agent/process.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/status.h"
#include "launcher/agent/isolation/cpu_plan.h"
#include "launcher/agent/job_files.h"

extern char** environ;

namespace baton {
namespace {

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Messages from the child (and keeper) to Spawn, 3 ints each (atomic pipe writes).
enum MsgKind : int { kChildPid = 1, kFailed = 2 };

// After fork, async-signal-safe: reports a failing step as (step, errno) and exits 127.
[[noreturn]] void FailStep(int msg_fd, int step) {
  int msg[3] = {kFailed, step, errno};
  (void)!write(msg_fd, msg, sizeof msg);
  _exit(127);
}

// After fork: unblocks every signal and gives each `action` (SIGCHLD keeps its default).
void ResetSignals(sighandler_t action) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent blocks stop signals; jobs must not
  for (int s = 1; s < NSIG; ++s) signal(s, s == SIGCHLD ? SIG_DFL : action);
}

// After fork: the calling process joins the job's cgroups (step 2 on failure).
void JoinCgroups(const SpawnOptions& o, int msg_fd) {
  for (const auto& procs : o.cgroup_procs) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) FailStep(msg_fd, 2);
    close(fd);
  }
}

// After fork: become `u` for good (raw syscalls: this process has one thread, and glibc's
// wrappers would try to signal the parent's). Groups first, the uid last; no_new_privs
// always, so that no setuid program gives the job more than its owner has.
void BecomeUser(const std::optional<ProcessUser>& user, int msg_fd) {
  if (user && (user->uid != geteuid() || user->gid != getegid())) {
    const ProcessUser& u = *user;
    if (syscall(SYS_setgroups, u.groups.size(), u.groups.data()) != 0) FailStep(msg_fd, 7);
    if (syscall(SYS_setresgid, u.gid, u.gid, u.gid) != 0) FailStep(msg_fd, 7);
    if (syscall(SYS_setresuid, u.uid, u.uid, u.uid) != 0) FailStep(msg_fd, 7);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) FailStep(msg_fd, 8);
}

// In the child: async-signal-safe only. Reports a failing step as (step, errno).
[[noreturn]] void ChildExec(const SpawnOptions& o, char** argv, char** envp, int log_fd, int err_fd,
                            pid_t group) {
  auto fail = [err_fd](int step) { FailStep(err_fd, step); };
  ResetSignals(SIG_DFL);
  if (setpgid(0, group) != 0) fail(1);
  JoinCgroups(o, err_fd);
  // The agent's own CPUs are not the job's: its binding, within its cpuset, decides.
  if (int step = BindThisProcess(o.binding); step != 0) fail(8 + step);
  BecomeUser(o.user, err_fd);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(log_fd, 1) < 0 ||
      dup2(o.error_fd >= 0 ? o.error_fd : log_fd, 2) < 0) {
    fail(3);
  }
  if (devnull > 2) close(devnull);  // the job gets stdin, not a second /dev/null descriptor
  if (chdir(o.cwd.c_str()) != 0) fail(4);
  // glibc's execvpe searches the caller's PATH, not envp's: make the job's environment
  // the caller's so argv[0] resolves with the PATH the job was given (spec.env).
  environ = envp;
  execvpe(argv[0], argv, envp);
  fail(5);
  _exit(127);
}

// Closes every descriptor from 3 up except `keep` (async-signal-safe: sorts in place).
void CloseAllExcept(int* keep, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; --j) std::swap(keep[j - 1], keep[j]);
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

// "<prefix><pid>" into `out` (async-signal-safe).
void ExitPath(const char* prefix, pid_t pid, char* out, size_t size) {
  size_t n = 0;
  while (prefix[n] != 0 && n + 12 < size) {
    out[n] = prefix[n];
    ++n;
  }
  char digits[12];
  int d = 0;
  for (unsigned long v = static_cast<unsigned long>(pid); d == 0 || v > 0; v /= 10) {
    digits[d++] = static_cast<char>('0' + v % 10);
  }
  while (d > 0) out[n++] = digits[--d];
  out[n] = 0;
}

// "<code> <signal>\n" (async-signal-safe).
size_t FormatStatus(int code, int sig, char* out) {
  size_t n = 0;
  auto put = [&](int v) {
    char digits[12];
    int d = 0;
    for (unsigned int u = static_cast<unsigned int>(v); d == 0 || u > 0; u /= 10) {
      digits[d++] = static_cast<char>('0' + u % 10);
    }
    while (d > 0) out[n++] = digits[--d];
  };
  put(code);
  out[n++] = ' ';
  put(sig);
  out[n++] = '\n';
  return n;
}

// The keeper (async-signal-safe only): starts the child, reports its pid, waits for it,
// records its end in "<exit_prefix><pid>" and ends the same way.
[[noreturn]] void KeeperMain(const SpawnOptions& o, char** argv, char** envp, int log_fd,
                             int msg_fd, pid_t group, const char* exit_prefix) {
  ResetSignals(SIG_IGN);  // deaf to all but SIGKILL: only the child's end ends it
  // Out of the agent's process group (its signals are not ours) but in its session: the
  // child joins the attempt's group, which the first rank made in this session.
  setpgid(0, 0);
  JoinCgroups(o, msg_fd);
  int keep[64];
  size_t nkeep = 0;
  keep[nkeep++] = log_fd;
  keep[nkeep++] = msg_fd;
  if (o.error_fd >= 0) keep[nkeep++] = o.error_fd;
  for (int fd : o.keep_open_fds) {
    if (nkeep < 64) keep[nkeep++] = fd;
    fcntl(fd, F_SETFD, FD_CLOEXEC);  // held here, never seen by the child
  }
  CloseAllExcept(keep, nkeep);  // the agent's sockets and files are not ours to hold
  pid_t child = fork();
  if (child == 0) ChildExec(o, argv, envp, log_fd, msg_fd, group);
  if (child < 0) FailStep(msg_fd, 6);
  setpgid(child, group == 0 ? child : group);  // before anyone hears the pid
  int msg[3] = {kChildPid, child, 0};
  (void)!write(msg_fd, msg, sizeof msg);
  close(msg_fd);
  close(log_fd);
  if (o.error_fd >= 0) close(o.error_fd);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) _exit(255);
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  char path[4096];
  ExitPath(exit_prefix, child, path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    char text[32];
    (void)!write(fd, text, FormatStatus(code, sig, text));
    close(fd);
  }
  if (sig == 0) _exit(code);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // the child's crash is not the keeper's
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

absl::Status ExecError(const SpawnOptions& o, int step, int err) {
  std::string what;
  switch (step) {
    case 1:
      what = "setpgid";
      break;
    case 2:
      what = "join the job's cgroups";
      break;
    case 3:
      what = "redirect output";
      break;
    case 4:
      what = "chdir to " + o.cwd;
      break;
    case 6:
      what = "fork the keeper's child";
      break;
    case 7:
      what = "become uid " + std::to_string(o.user ? o.user->uid : 0) + " gid " +
             std::to_string(o.user ? o.user->gid : 0) + " (is the agent root?)";
      break;
    case 8:
      what = "set no_new_privs";
      break;
    case 9:
      what = "bind to CPUs " + FormatCpuList(o.binding.cpus);
      break;
    case 10:
      what = "bind memory to NUMA nodes " + FormatCpuList(o.binding.mems);
      break;
    default:
      what = "exec '" + o.argv[0] + "'";
  }
  absl::Status s = ErrnoToStatus(err, what);
  if (s.code() == absl::StatusCode::kInternal) {
    return absl::FailedPreconditionError(std::string(s.message()));
  }
  return s;
}

}  // namespace

std::optional<ExitStatus> ReadExitFile(const std::string& exit_dir, pid_t pid) {
  // The keeper (root) wrote it in the agent's job dir; read it as carefully as any other.
  absl::StatusOr<std::string> text =
      ReadUntrustedFile(exit_dir + "/exit." + std::to_string(pid), geteuid(), 64);
  if (!text.ok()) return std::nullopt;
  std::istringstream in(*text);
  ExitStatus st;
  if (!(in >> st.exit_code >> st.term_signal)) return std::nullopt;
  return st;
}

absl::StatusOr<pid_t> Spawn(const SpawnOptions& o, pid_t* failed_child, pid_t* keeper) {
  if (o.argv.empty() || o.argv[0].empty()) return absl::InvalidArgumentError("empty command");
  const bool kept = !o.exit_dir.empty();
  if (o.keep_open_fds.size() > 60) return absl::InvalidArgumentError("too many descriptors");
  int log_fd = o.output_fd >= 0
                   ? fcntl(o.output_fd, F_DUPFD_CLOEXEC, 3)
                   : open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) return ErrnoToStatus(errno, "open log " + o.log_path);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    int err = errno;
    close(log_fd);
    return ErrnoToStatus(err, "pipe");
  }
  std::vector<char*> argv = CStrings(o.argv);
  std::vector<char*> envp = CStrings(o.env);
  std::string exit_prefix = o.exit_dir + "/exit.";
  pid_t pid = fork();
  if (pid == 0 && kept) {
    KeeperMain(o, argv.data(), envp.data(), log_fd, pipefd[1], o.process_group,
               exit_prefix.c_str());
  }
  if (pid == 0) ChildExec(o, argv.data(), envp.data(), log_fd, pipefd[1], o.process_group);
  int fork_err = errno;
  close(pipefd[1]);
  close(log_fd);
  if (pid < 0) {
    close(pipefd[0]);
    return ErrnoToStatus(fork_err, "fork");
  }
  // Also set the group from the parent: whichever runs first, the group exists before
  // anyone signals it. (A keeper does this for its child.)
  if (!kept) setpgid(pid, o.process_group == 0 ? pid : o.process_group);
  pid_t child = kept ? 0 : pid;
  int failure[2] = {0, 0};
  bool failed = false;
  for (;;) {
    int msg[3];
    ssize_t n;
    do {
      n = read(pipefd[0], msg, sizeof msg);
    } while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(sizeof msg)) break;  // EOF: exec'ed, or all said
    if (msg[0] == kChildPid) child = msg[1];
    if (msg[0] == kFailed && !failed) {
      failed = true;
      failure[0] = msg[1];
      failure[1] = msg[2];
    }
  }
  close(pipefd[0]);
  if (keeper) *keeper = kept ? pid : 0;
  if (failed || child <= 0) {
    // The child already exited with 127 (its keeper too); whoever reaps children collects it.
    if (failed_child) *failed_child = pid;
    return failed ? ExecError(o, failure[0], failure[1])
                  : absl::InternalError("the keeper of '" + o.argv[0] + "' reported no child");
  }
  return child;
}

Reaper::Reaper() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
}

Reaper::~Reaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (const auto& [pidfd, child] : children_) close(pidfd);
  close(wake_fd_);
  close(epoll_fd_);
}

absl::StatusOr<pid_t> Reaper::SpawnAndWatch(const SpawnOptions& options, Callback on_exit,
                                            pid_t* keeper) {
  pid_t failed = 0, kept_by = 0;
  auto pid = Spawn(options, &failed, &kept_by);
  if (!pid.ok()) {
    if (failed > 0) waitpid(failed, nullptr, 0);  // exiting with 127 already
    return pid;
  }
  if (keeper) *keeper = kept_by;
  pid_t own = kept_by ? kept_by : *pid;  // our child: the keeper when there is one
  // A pidfd also refers to a child that has already exited and not been reaped.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, own, 0));
  if (pidfd < 0) {
    int err = errno;
    kill(*pid, SIGKILL);
    kill(own, SIGKILL);
    waitpid(own, nullptr, 0);
    return ErrnoToStatus(err, "pidfd_open");
  }
  std::lock_guard<std::mutex> lock(mu_);
  children_[pidfd] = Child{*pid, std::move(on_exit)};
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = pidfd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, pidfd, &ev);
  return pid;
}

void Reaper::Run() {
  epoll_event events[32];
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, 32, -1);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        continue;
      }
      siginfo_t info{};
      if (waitid(P_PIDFD, static_cast<id_t>(fd), &info, WEXITED) != 0) continue;
      ExitStatus st;
      if (info.si_code == CLD_EXITED) {
        st.exit_code = info.si_status;
      } else {
        st.term_signal = info.si_status;
      }
      Child child;
      {
        std::lock_guard<std::mutex> lock(mu_);
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        close(fd);
        auto it = children_.find(fd);
        child = std::move(it->second);
        children_.erase(it);
      }
      child.on_exit(child.pid, st);
    }
  }
}

}  // namespace baton
