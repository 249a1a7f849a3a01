#include "launcher/agent/process.h"

#include <fcntl.h>
#include <signal.h>
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
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) fail(3);
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
  int log_fd = open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
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

Reaper::Reaper() : thread_([this] { Run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The thread may sit in waitid on a live child; it cannot be interrupted portably, so
  // the reaper lives as long as the process (daemons destroy it at exit only).
  thread_.detach();
}

absl::StatusOr<pid_t> Reaper::SpawnAndWatch(const SpawnOptions& options, Callback on_exit) {
  pid_t failed = 0;
  auto pid = Spawn(options, &failed);
  std::unique_lock<std::mutex> lock(mu_);
  if (!pid.ok()) {
    if (failed > 0 && !early_.erase(failed)) callbacks_[failed] = [](pid_t, ExitStatus) {};
    return pid;
  }
  auto early = early_.find(*pid);
  if (early != early_.end()) {
    ExitStatus st = early->second;
    early_.erase(early);
    lock.unlock();
    on_exit(*pid, st);
    return pid;
  }
  callbacks_[*pid] = std::move(on_exit);
  cv_.notify_all();
  return pid;
}

void Reaper::Run() {
  for (;;) {
    siginfo_t info{};
    int rc = waitid(P_ALL, 0, &info, WEXITED);
    if (rc != 0) {
      if (errno == EINTR) continue;
      // ECHILD: nothing to reap until the next spawn.
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_) return;
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    ExitStatus st;
    if (info.si_code == CLD_EXITED) {
      st.exit_code = info.si_status;
    } else {
      st.term_signal = info.si_status;
    }
    Callback cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = callbacks_.find(info.si_pid);
      if (it == callbacks_.end()) {
        early_[info.si_pid] = st;
        continue;
      }
      cb = std::move(it->second);
      callbacks_.erase(it);
    }
    cb(info.si_pid, st);
  }
}

}  // namespace baton
