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
