#include "launcher/agent/process.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "common/status.h"
#include "launcher/agent/isolation/cpu_plan.h"
#include "launcher/agent/job_files.h"
#include "launcher/agent/keeper_args.h"
#include "launcher/agent/keeper_zygote.h"

namespace baton {
namespace {

// What the keeper's starter needs: it runs on a stack of its own in the spawner's memory
// (CLONE_VM) while the spawning thread waits (CLONE_VFORK), so it only clears close-on-exec
// on the descriptors the keeper inherits, which touches its own descriptor table, and execs.
struct KeeperExec {
  const char* path;
  char* const* argv;
  const int* fds;
  size_t fd_count;
  int msg_fd;
};

__attribute__((no_sanitize_address)) int ExecKeeper(void* arg) {
  const auto* x = static_cast<const KeeperExec*>(arg);
  for (size_t i = 0; i < x->fd_count; ++i) fcntl(x->fds[i], F_SETFD, 0);
  static char* const kNoEnvironment[] = {nullptr};
  execve(x->path, x->argv, kNoEnvironment);
  FailStep(x->msg_fd, kStepExecKeeper);
}

// Starts `program` as posix_spawn would: no copy of this process's page tables, no
// copy-on-write afterwards. Every signal stays blocked in the new process until it has set
// its own dispositions: no handler of the agent's can run in it. Only `fds` stay open in it.
pid_t CloneExec(const std::string& program, const std::vector<std::string>& args,
                const std::vector<int>& fds, int msg_fd) {
  std::vector<char*> argv = CStringArray(args);
  KeeperExec x{program.c_str(), argv.data(), fds.data(), fds.size(), msg_fd};
  constexpr size_t kStack = 64 * 1024;
  void* stack =
      mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid =
      clone(ExecKeeper, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &x);
  int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kStack);
  errno = err;
  return pid;
}

// The agent's keeper zygote (keeper_zygote.h): started on first use, and again after it
// ended. It is this process's child; it is reaped here when it is found gone (the only
// child the Reaper does not wait for).
class Zygote {
 public:
  static Zygote& Get() {
    static Zygote* z = new Zygote;
    return *z;
  }
  // The keeper's pid; -1 where the caller execs a keeper instead (no zygote, or it failed).
  pid_t StartKeeper(const std::string& program, const std::vector<std::string>& args,
                    const std::vector<int>& fds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (sock_ < 0 && !LaunchLocked(program)) return -1;
    pid_t pid = RequestKeeper(sock_, args, fds);
    if (pid < 0 && (errno == EPIPE || errno == ECONNRESET || errno == EPROTO)) DropLocked();
    return pid;
  }
  pid_t pid() {
    std::lock_guard<std::mutex> lock(mu_);
    return pid_;
  }

 private:
  bool LaunchLocked(const std::string& program) {
    // A zygote that cannot start (a keeper built without it, say) is not tried forever.
    if (failures_ >= 3) return false;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
    pid_t pid = CloneExec(program, {program, "--zygote", std::to_string(sv[1])}, {sv[1]}, -1);
    close(sv[1]);
    int32_t ready = -1;
    ssize_t n = pid > 0 ? read(sv[0], &ready, sizeof ready) : -1;
    if (n != static_cast<ssize_t>(sizeof ready) || ready != 0) {
      close(sv[0]);
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
      ++failures_;
      return false;
    }
    sock_ = sv[0];
    pid_ = pid;
    return true;
  }
  void DropLocked() {
    close(sock_);
    sock_ = -1;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
    ++failures_;
  }

  std::mutex mu_;
  int sock_ = -1;
  pid_t pid_ = 0;
  int failures_ = 0;
};

// BATON_KEEPER_ZYGOTE=0 in the agent's environment: exec a keeper per process (to measure
// what the zygote saves, or to rule it out).
bool ZygoteWanted() {
  static const bool wanted = [] {
    const char* v = getenv("BATON_KEEPER_ZYGOTE");
    return v == nullptr || std::string(v) != "0";
  }();
  return wanted;
}

// Starts the keeper (spawn_child.h) for `o`: forked by the zygote where there is one, else
// exec'd here.
pid_t StartKeeper(const SpawnOptions& o, const std::string& program, int log_fd, int msg_fd) {
  KeeperArgs k;
  k.argv = o.argv;
  k.env = o.env;
  k.cwd = o.cwd;
  k.exit_prefix = o.exit_dir + "/exit.";
  k.msg_fd = msg_fd;
  k.out_fd = log_fd;
  k.err_fd = o.error_fd;
  k.keep_fds = o.keep_open_fds;
  k.group = o.process_group;
  k.cgroup_procs = o.cgroup_procs;
  k.exit_cgroup_procs = o.exit_cgroup_procs;
  k.binding = o.binding;
  k.user = o.user;
  std::vector<std::string> args = EncodeKeeperArgs(k);
  std::vector<int> fds;
  for (const int* fd : KeeperFds(k)) fds.push_back(*fd);
  if (program == KeeperProgram() && ZygoteWanted()) {
    pid_t pid = Zygote::Get().StartKeeper(program, args, fds);
    if (pid > 0) return pid;
  }
  args.insert(args.begin(), program);
  return CloneExec(program, args, fds, msg_fd);
}

absl::Status ExecError(const SpawnOptions& o, int step, int err) {
  std::string what;
  switch (step) {
    case kStepSetpgid:
      what = "setpgid";
      break;
    case kStepCgroups:
      what = "join the job's cgroups";
      break;
    case kStepRedirect:
      what = "redirect output";
      break;
    case kStepChdir:
      what = "chdir to " + o.cwd;
      break;
    case kStepForkChild:
      what = "start the keeper's child";
      break;
    case kStepUser:
      what = "become uid " + std::to_string(o.user ? o.user->uid : 0) + " gid " +
             std::to_string(o.user ? o.user->gid : 0) + " (is the agent root?)";
      break;
    case kStepNoNewPrivs:
      what = "set no_new_privs";
      break;
    case kStepCpus:
      what = "bind to CPUs " + FormatCpuList(o.binding.cpus);
      break;
    case kStepMems:
      what = "bind memory to NUMA nodes " + FormatCpuList(o.binding.mems);
      break;
    case kStepExecKeeper:
      what = "exec the keeper " + (o.keeper_program.empty() ? KeeperProgram() : o.keeper_program);
      break;
    case kStepKeeperArgs:
      what = "pass the keeper its arguments";
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

const std::string& KeeperProgram() {
  static const std::string* program = [] {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    return new std::string(dir + "/baton-keeper");
  }();
  return *program;
}

pid_t KeeperZygotePid() { return Zygote::Get().pid(); }

bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

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
  pid_t pid;
  if (kept) {
    pid = StartKeeper(o, o.keeper_program.empty() ? KeeperProgram() : o.keeper_program, log_fd,
                      pipefd[1]);
  } else {
    // Everything the child reads is ready before fork: after it, async-signal-safe only.
    OwnedChildPlan owned(o.argv, o.env, o.cgroup_procs);
    ChildPlan& plan = owned.plan;
    plan.cwd = o.cwd.c_str();
    plan.out_fd = log_fd;
    plan.err_fd = o.error_fd;
    plan.group = o.process_group;
    plan.binding = &o.binding;
    plan.user = o.user ? &*o.user : nullptr;
    pid = fork();
    if (pid == 0) ChildExec(plan, pipefd[1]);
  }
  int fork_err = errno;
  close(pipefd[1]);
  close(log_fd);
  if (pid < 0) {
    close(pipefd[0]);
    return ErrnoToStatus(fork_err, kept ? "start the keeper" : "fork");
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
    if (msg[0] == kSpawnChildPid) child = msg[1];
    if (msg[0] == kSpawnFailed && !failed) {
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

int Spawner::Signal(pid_t pid, int signal) { return kill(pid, signal); }

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
