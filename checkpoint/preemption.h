// Preemption as a training loop sees it: SIGUSR1 (sent by the node agent or forwarded by
// mpirun) means "finish this step, save, exit 0" within BATON_GRACE_SECONDS. The watcher
// owns the signal handler (async-signal-safe: it only stores to lock-free atomics) and
// turns the per-rank flag into one agreed answer at step boundaries. One watcher per
// process; its methods are thread-safe, ShouldStop is a collective call.
// A second reason to stop: the job was relaunched elsewhere while this attempt still runs
// (its node was cut off, its agent died). ShouldStop reads the checkpoint directory's
// FENCE (at most once per fence_poll_ms) and stops a superseded attempt; its saves would
// be refused anyway (FORMAT.md "Fence"), so such a program exits without saving.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "checkpoint/collective.h"

namespace baton::checkpoint {

struct PreemptionOptions {
  int signal = SIGUSR1;  // the signal that asks for a checkpoint and a clean exit
  // Seconds from the signal until the agent kills the job; -1 reads BATON_GRACE_SECONDS
  // (unset there: no deadline).
  int64_t grace_seconds = -1;
  // The checkpoint directory whose FENCE is polled, and this process's attempt. Empty dir:
  // BATON_CHECKPOINT_DIR; attempt -1: BATON_ATTEMPT. No polling without a directory.
  std::string fence_dir = {};
  int64_t attempt = -1;
  int64_t fence_poll_ms = 1000;
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
  // Whether ShouldStop found that a newer attempt owns the checkpoint directory (then
  // saving is pointless: it would fail with "superseded by attempt N").
  bool Superseded() const { return superseded_by_.load() > 0; }
  int64_t superseded_by() const { return superseded_by_.load(); }
  // Milliseconds left of the grace period, counted from this rank's signal; nullopt
  // before any signal or without a grace period. Can be negative once it has passed.
  std::optional<int64_t> RemainingMs() const;
  std::optional<int64_t> grace_seconds() const { return grace_seconds_; }

 private:
  PreemptionWatcher(int signal, std::optional<int64_t> grace, struct sigaction previous,
                    std::string fence_dir, int64_t attempt, int64_t fence_poll_ms)
      : signal_(signal),
        grace_seconds_(grace),
        previous_(previous),
        fence_dir_(std::move(fence_dir)),
        attempt_(attempt),
        fence_poll_ms_(fence_poll_ms) {}
  void PollFence();

  const int signal_;
  const std::optional<int64_t> grace_seconds_;
  const struct sigaction previous_;
  const std::string fence_dir_;
  const int64_t attempt_;
  const int64_t fence_poll_ms_;
  std::atomic<int64_t> next_poll_ms_{0};
  std::atomic<int64_t> superseded_by_{0};
};

}  // namespace baton::checkpoint
