#include "tests/util/subprocess.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace baton::testing {

namespace {

// This process's environment with `env` set over it, as "NAME=value".
std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& env) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  return envs;
}

// Starts `argv` (looked up in PATH) with `env` set over ours, in a process group of its
// own and with no signal blocked, its descriptors as `fa` sets them; -1 when it cannot.
// posix_spawn (vfork-like) rather than fork: a parent with a large heap would otherwise
// pay for copying its page tables, and then for faults on every page it writes.
pid_t SpawnInOwnGroup(std::vector<std::string> argv, const std::map<std::string, std::string>& env,
                      const posix_spawn_file_actions_t* fa) {
  std::vector<std::string> envs = MergedEnv(env);
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  if (posix_spawnp(&pid, cargv[0], fa, &attr, cargv.data(), cenv.data()) != 0) pid = -1;
  posix_spawnattr_destroy(&attr);
  return pid;
}

}  // namespace

Subprocess::Subprocess(std::vector<std::string> argv, std::map<std::string, std::string> env,
                       const std::string& log_prefix) {
  std::string out = log_prefix.empty() ? "/dev/null" : log_prefix + ".out";
  std::string err = log_prefix.empty() ? "/dev/null" : log_prefix + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_ = SpawnInOwnGroup(std::move(argv), env, &fa);
  posix_spawn_file_actions_destroy(&fa);
  if (pid_ < 0) status_ = 127;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

TeardownGuard::TeardownGuard(const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env, int hold_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  // Above the three the child's actions set, so that dup2 to 3 is never onto itself.
  const int held = hold_fd >= 0 ? fcntl(hold_fd, F_DUPFD_CLOEXEC, 10) : -1;
  std::vector<std::string> args = {"/bin/sh", "-c", "[ \"$(cat)\" = done ] || exec \"$@\"", "sh"};
  args.insert(args.end(), argv.begin(), argv.end());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[0], 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (held >= 0) posix_spawn_file_actions_adddup2(&fa, held, 3);
  pid_ = SpawnInOwnGroup(std::move(args), env, &fa);
  posix_spawn_file_actions_destroy(&fa);
  if (held >= 0) close(held);
  close(fds[0]);
  if (pid_ > 0) {
    fd_ = fds[1];
  } else {
    close(fds[1]);
  }
}

TeardownGuard::~TeardownGuard() {
  if (fd_ >= 0) {
    (void)!write(fd_, "done", 4);
    close(fd_);
  }
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

void Subprocess::Signal(int sig) {
  if (pid_ > 0 && !status_) kill(pid_, sig);
}

bool Subprocess::running() {
  if (status_) return false;
  return !Wait(std::chrono::milliseconds(0)).has_value();
}

std::optional<int> Subprocess::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  // Sleep on a pidfd until the child exits or the time is up: no polling quantum skews
  // the timings benchmarks take with this.
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    int rc;
    do {
      rc = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (rc < 0 && errno == EINTR);
    close(pidfd);
    if (rc == 0) return std::nullopt;
  }
  int st = 0;
  if (waitpid(pid_, &st, pidfd >= 0 ? 0 : WNOHANG) != pid_) return std::nullopt;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return status_;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/baton-run.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  CommandResult r;
  {
    Subprocess p(argv, env, dir + "/cmd");
    auto code = p.Wait(timeout);
    r.exit_code = code.value_or(-1);
  }
  r.out = ReadFile(dir + "/cmd.out");
  r.err = ReadFile(dir + "/cmd.err");
  unlink((dir + "/cmd.out").c_str());
  unlink((dir + "/cmd.err").c_str());
  rmdir(dir.c_str());
  return r;
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace baton::testing
