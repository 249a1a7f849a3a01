#include "launcher/agent/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/status.h"

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

// In the child: async-signal-safe only. Reports a failing step as (step, errno).
[[noreturn]] void ChildExec(const SpawnOptions& o, char** argv, char** envp, int log_fd, int err_fd,
                            pid_t group) {
  auto fail = [err_fd](int step) {
    int msg[2] = {step, errno};
    (void)!write(err_fd, msg, sizeof msg);
    _exit(127);
  };
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the agent blocks stop signals; jobs must not
  for (int s = 1; s < NSIG; ++s) signal(s, SIG_DFL);
  if (setpgid(0, group) != 0) fail(1);
  for (const auto& procs : o.cgroup_procs) {
    int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) fail(2);
    close(fd);
  }
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

absl::StatusOr<pid_t> Spawn(const SpawnOptions& o, pid_t* failed_child) {
  if (o.argv.empty() || o.argv[0].empty()) return absl::InvalidArgumentError("empty command");
  int log_fd = o.output_fd >= 0
                   ? fcntl(o.output_fd, F_DUPFD_CLOEXEC, 3)
                   : open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd < 0) return ErrnoToStatus(errno, "open log " + o.log_path);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    int err = errno;
    close(log_fd);
    return ErrnoToStatus(err, "pipe");
  }
  std::vector<char*> argv = CStrings(o.argv);
  std::vector<char*> envp = CStrings(o.env);
  pid_t pid = fork();
  if (pid == 0) ChildExec(o, argv.data(), envp.data(), log_fd, pipefd[1], o.process_group);
  int fork_err = errno;
  close(pipefd[1]);
  close(log_fd);
  if (pid < 0) {
    close(pipefd[0]);
    return ErrnoToStatus(fork_err, "fork");
  }
  // Also set the group from the parent: whichever runs first, the group exists before
  // anyone signals it.
  setpgid(pid, o.process_group == 0 ? pid : o.process_group);
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(pipefd[0], msg, sizeof msg);
  } while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof msg)) {
    // The child already exited with 127; whoever reaps children collects it.
    if (failed_child) *failed_child = pid;
    return ExecError(o, msg[0], msg[1]);
  }
  return pid;
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

absl::StatusOr<pid_t> Reaper::SpawnAndWatch(const SpawnOptions& options, Callback on_exit) {
  pid_t failed = 0;
  auto pid = Spawn(options, &failed);
  if (!pid.ok()) {
    if (failed > 0) waitpid(failed, nullptr, 0);  // exiting with 127 already
    return pid;
  }
  // A pidfd also refers to a child that has already exited and not been reaped.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, *pid, 0));
  if (pidfd < 0) {
    int err = errno;
    kill(*pid, SIGKILL);
    waitpid(*pid, nullptr, 0);
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
