// Preemption as a training loop sees it: SIGUSR1 (sent by the node agent or forwarded by
// mpirun) means "finish this step, save, exit 0" within BATON_GRACE_SECONDS. The watcher
// owns the signal handler (async-signal-safe: it only stores to lock-free atomics) and
// turns the per-rank flag into one agreed answer at step boundaries. One watcher per
// process; its methods are thread-safe, ShouldStop is a collective call.
#pragma once

#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

namespace baton::checkpoint {

struct PreemptionOptions {
  int signal = SIGUSR1;  // the signal that asks for a checkpoint and a clean exit
  // Seconds from the signal until the agent kills the job; -1 reads BATON_GRACE_SECONDS
  // (unset there: no deadline).
  int64_t grace_seconds = -1;
};

class PreemptionWatcher {
 public:
  // Installs the handler. AlreadyExists if another watcher lives in this process;
  // InvalidArgument for a bad BATON_GRACE_SECONDS.
  static absl::StatusOr<std::unique_ptr<PreemptionWatcher>> Create(
      const PreemptionOptions& options = {});
  // Puts back the handler that was there before.
  ~PreemptionWatcher();
  PreemptionWatcher(const PreemptionWatcher&) = delete;
  PreemptionWatcher& operator=(const PreemptionWatcher&) = delete;

  // Whether this process got the signal (or RequestStop). No communication.
  bool StopRequested() const;
  // Same as receiving the signal now (a program's own reasons to stop, tests).
  void RequestStop();
  // Collective: true on every rank if any rank was asked to stop, so that all ranks save
  // the same step. Call it at the same step boundary on every rank.
  absl::StatusOr<bool> ShouldStop(Collective& collective);
  // Milliseconds left of the grace period, counted from this rank's signal; nullopt
  // before any signal or without a grace period. Can be negative once it has passed.
  std::optional<int64_t> RemainingMs() const;
  std::optional<int64_t> grace_seconds() const { return grace_seconds_; }

 private:
  PreemptionWatcher(int signal, std::optional<int64_t> grace, struct sigaction previous)
      : signal_(signal), grace_seconds_(grace), previous_(previous) {}

  const int signal_;
  const std::optional<int64_t> grace_seconds_;
  const struct sigaction previous_;
};

}  // namespace baton::checkpoint
