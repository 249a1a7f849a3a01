// The agent's MPS pools (docs/isolation.md, "GPU shares"): one CUDA MPS control daemon per
// GPU offered as a pool (--mps-gpus), started before the pool's first share and stopped
// (`quit`) after its last, with its pipe and log directories under the agent's data dir
// per GPU UUID. Limits are set on the daemon's side where MPS offers it: the MPS server
// of a pool (one per uid; the scheduler keeps one user per pool) gets the sum of the
// pool's shares as its active-thread percentage and pinned-memory limit, as defaults for
// a server still to start and on the running one (`get_server_list`), so that the user's
// jobs together cannot go past what was granted whatever their environment says. Per job,
// MPS enforces only through the client's own environment (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), which a job may change: MPS sharing is for
// cooperating services, MIG is the isolation. The agent never changes a GPU's compute mode
// or any other GPU setting. Commands go through a CommandRunner (`env … sh -c`), so tests
// run a fake nvidia-cuda-mps-control. Thread-safe (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/command.h"

namespace baton {

struct MpsShare {
  std::string gpu_uuid;
  uint32_t percent = 0;       // 1..100 of the GPU's compute
  uint64_t memory_bytes = 0;  // its GPU memory limit
};

class MpsPools {
 public:
  // `dir`: where each pool's pipe and log directories go (<dir>/<uuid>/{pipe,log}).
  MpsPools(std::string dir, std::unique_ptr<CommandRunner> runner,
           std::string control = "nvidia-cuda-mps-control");

  // The client environment of an attempt's share (pipe and log directories, its own
  // limits): the pool's daemon is started first if it does not run, and the server's
  // limits raised to the pool's shares. Acquiring an attempt again (a re-adopted one)
  // keeps one share. On a failure nothing is held.
  absl::StatusOr<std::map<std::string, std::string>> Acquire(uint64_t job, uint32_t attempt,
                                                             const MpsShare& share);
  // The attempt's share goes and the server's limits shrink; the daemon stops after the
  // pool's last share. Unknown attempts: OK.
  absl::Status Release(uint64_t job, uint32_t attempt);
  // Daemons that died while shares remain (an MPS server fault ends every client of the
  // pool) are started again with their limits; returns the attempts whose pool that was.
  std::vector<std::pair<uint64_t, uint32_t>> Check();

  // The pool directories of a GPU (tests, and the daemon's environment).
  std::string PipeDir(const std::string& uuid) const { return dir_ + "/" + uuid + "/pipe"; }
  std::string LogDir(const std::string& uuid) const { return dir_ + "/" + uuid + "/log"; }

 private:
  using Key = std::pair<uint64_t, uint32_t>;
  struct Pool {
    std::map<Key, MpsShare> shares;
  };
  bool AliveLocked(const std::string& uuid) const;
  absl::Status StartLocked(const std::string& uuid);
  absl::StatusOr<std::string> SendLocked(const std::string& uuid, const std::string& command);
  // The server's limits: the sum of the pool's shares.
  absl::Status SetLimitsLocked(const std::string& uuid, const Pool& pool);
  std::vector<std::string> EnvLocked(const std::string& uuid) const;

  const std::string dir_;
  std::unique_ptr<CommandRunner> runner_;
  const std::string control_;
  std::mutex mu_;
  std::map<std::string, Pool> pools_;  // by GPU UUID, pools with shares only
};

}  // namespace baton
