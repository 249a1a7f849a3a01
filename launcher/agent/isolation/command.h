// The OS seam under the tc and nft wrappers: run a command to completion and capture its
// output. RealCommandRunner uses posix_spawnp; tests record or script the calls.
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

struct CommandOutput {
  int exit_code = -1;  // 128+signal when killed
  std::string out;
  std::string err;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Unavailable when the program cannot be started; otherwise its exit code and output.
  virtual absl::StatusOr<CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

class RealCommandRunner : public CommandRunner {
 public:
  absl::StatusOr<CommandOutput> Run(const std::vector<std::string>& argv) override;
};

// "tc qdisc add …" for messages.
std::string JoinArgs(const std::vector<std::string>& argv);

}  // namespace baton
