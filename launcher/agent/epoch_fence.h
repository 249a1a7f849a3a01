// An agent's guard against a deposed coordinator (HA, docs/ha.md): every command carries
// its sender's leader epoch; the fence keeps the highest seen, in <data dir>/leader_epoch
// (written before the first command of a new epoch acts, so a restarted agent still
// knows it), and refuses commands of an older epoch. Epoch 0 is a single coordinator's
// (no HA): always taken, never recorded. Used by Agent::Handle; thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace baton {

class EpochFence {
 public:
  // The epoch recorded in `data_dir` (none yet: 0); DataLoss when the file is not a
  // number (the agent's main refuses to start on it).
  static absl::StatusOr<uint64_t> Recorded(const std::string& data_dir);
  // Starts from the recorded epoch (0 when it cannot be read: main checked it).
  explicit EpochFence(const std::string& data_dir);

  // True when a command of `epoch` may act. A newer epoch is recorded first; should the
  // write fail, the command is refused (it may come again once the disk is back).
  bool Accept(uint64_t epoch);
  uint64_t highest() const;

 private:
  std::string path_;
  mutable std::mutex mu_;
  uint64_t highest_ = 0;  // guarded by mu_
};

}  // namespace baton
