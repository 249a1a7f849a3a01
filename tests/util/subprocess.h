// Real child processes for integration tests: start a binary with arguments and extra
// environment, capture its output in files, wait with a deadline, signal it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace baton::testing {

class Subprocess {
 public:
  // stdout and stderr go to `log_prefix`.out / .err (or /dev/null when empty).
  Subprocess(std::vector<std::string> argv, std::map<std::string, std::string> env,
             const std::string& log_prefix);
  ~Subprocess();  // SIGKILLs a child still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // Exit status as a shell shows it (128+signal when killed); nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs `argv` (with `env` added) should this process die before the guard's end (a
// signal, a ctest timeout's SIGKILL): a shell in a process group of its own (a Ctrl-C of
// ours does not reach it) waits on a close-on-exec pipe only this process holds. The
// destructor tells it "done": the owner has torn down what the command would.
// `hold_fd` (a file the owner holds a flock on) stays open in the guard until the command
// has run, so that no one takes the lock while a torn-down cluster is still going.
class TeardownGuard {
 public:
  TeardownGuard(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                int hold_fd = -1);
  ~TeardownGuard();
  TeardownGuard(const TeardownGuard&) = delete;
  TeardownGuard& operator=(const TeardownGuard&) = delete;

 private:
  pid_t pid_ = -1;
  int fd_ = -1;  // the pipe's write end
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs to completion (killed after `timeout`), capturing output.
CommandResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

std::string ReadFile(const std::string& path);
// Polls `pred` every 20 ms until it holds or the deadline passes.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// A loopback TCP port free a moment ago (for servers that cannot listen on port 0 and
// tell which port they got); 0 when none could be had.
int FreePort();

}  // namespace baton::testing
