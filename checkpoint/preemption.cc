#include "checkpoint/preemption.h"

#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "checkpoint/fence.h"
#include "checkpoint/job_env.h"
#include "common/status.h"

namespace baton::checkpoint {
namespace {

static_assert(std::atomic<int64_t>::is_always_lock_free,
              "the signal handler may only touch lock-free atomics");

std::atomic<bool> g_installed{false};
// Monotonic ms of the first stop request; 0 while none.
std::atomic<int64_t> g_stop_ms{0};

int64_t MonotonicMs() {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe (POSIX.1-2008)
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void MarkStop() {
  int64_t expected = 0;
  const int64_t now = MonotonicMs();
  g_stop_ms.compare_exchange_strong(expected, now > 0 ? now : 1);
}

void OnSignal(int) {
  const int saved_errno = errno;
  MarkStop();
  errno = saved_errno;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PreemptionWatcher>> PreemptionWatcher::Create(
    const PreemptionOptions& options) {
  std::optional<int64_t> grace;
  if (options.grace_seconds >= 0) {
    grace = options.grace_seconds;
  } else {
    BATON_ASSIGN_OR_RETURN(grace, GraceSecondsFromEnv());
  }
  std::string fence_dir = options.fence_dir.empty() ? CheckpointDirFromEnv() : options.fence_dir;
  int64_t attempt = options.attempt;
  if (attempt < 0) {
    BATON_ASSIGN_OR_RETURN(attempt, AttemptFromEnv());
  }
  if (g_installed.exchange(true)) {
    return absl::AlreadyExistsError("a PreemptionWatcher already exists in this process");
  }
  g_stop_ms.store(0);
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction previous;
  if (::sigaction(options.signal, &action, &previous) != 0) {
    const int err = errno;
    g_installed.store(false);
    return ErrnoToStatus(err, "install handler for signal " + std::to_string(options.signal));
  }
  return std::unique_ptr<PreemptionWatcher>(new PreemptionWatcher(
      options.signal, grace, previous, std::move(fence_dir), attempt, options.fence_poll_ms));
}

PreemptionWatcher::~PreemptionWatcher() {
  ::sigaction(signal_, &previous_, nullptr);
  g_installed.store(false);
}

bool PreemptionWatcher::StopRequested() const { return g_stop_ms.load() != 0; }

void PreemptionWatcher::RequestStop() { MarkStop(); }

void PreemptionWatcher::PollFence() {
  if (fence_dir_.empty() || superseded_by_.load() > 0) return;
  const int64_t now = MonotonicMs();
  if (now < next_poll_ms_.load()) return;
  next_poll_ms_.store(now + fence_poll_ms_);
  // Unreadable or damaged: not a reason to stop a job; saves check the fence again.
  absl::StatusOr<Fence> fence = ReadFence(DefaultEnv(), fence_dir_);
  if (fence.ok() && fence->attempt > attempt_) {
    superseded_by_.store(fence->attempt);
    MarkStop();
  }
}

absl::StatusOr<bool> PreemptionWatcher::ShouldStop(Collective& collective) {
  PollFence();
  // One collective for both answers: 0 go on, 1 stop and save, 1+N superseded by attempt N
  // (so that every rank agrees to skip the save, not only the ones that read the fence).
  const int64_t superseded = superseded_by_.load();
  const int64_t mine = superseded > 0 ? 1 + superseded : (StopRequested() ? 1 : 0);
  BATON_ASSIGN_OR_RETURN(int64_t any, collective.AllReduceMax(mine));
  if (any > 1) {
    superseded_by_.store(any - 1);
    MarkStop();
  }
  return any != 0;
}

std::optional<int64_t> PreemptionWatcher::RemainingMs() const {
  const int64_t stop_ms = g_stop_ms.load();
  if (stop_ms == 0 || !grace_seconds_) return std::nullopt;
  return stop_ms + *grace_seconds_ * 1000 - MonotonicMs();
}

}  // namespace baton::checkpoint
