// Time, injected: every component that reads the clock takes a Clock*, so tests and the
// scheduler run on simulated time, and daemon loops wait on it (WaitFor), so that a fake
// clock drives them too. RealClock is thread-safe; FakeClock too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "absl/time/time.h"

namespace baton {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock milliseconds since the Unix epoch (recorded in events and attempts).
  virtual int64_t NowMs() const = 0;
  // Monotonic milliseconds (deadlines, leases); unrelated to NowMs's origin.
  virtual int64_t MonotonicMs() const = 0;
  // Typed: the wall clock as an absl::Time, and the monotonic one as a time since an
  // arbitrary origin (compare two of them; never print it as a date).
  absl::Time Now() const { return absl::FromUnixMillis(NowMs()); }
  absl::Time Monotonic() const { return absl::FromUnixMillis(MonotonicMs()); }
  // Waits on `cv` (with `lock` held, released meanwhile) until `done()` or this clock's
  // monotonic time has moved `d` on; returns done(). Wake-ups are the cv's, as always.
  virtual bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                       absl::Duration d, const std::function<bool()>& done) const = 0;
};

class RealClock final : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t MonotonicMs() const override;
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, absl::Duration d,
               const std::function<bool()>& done) const override;
  // The process-wide real clock (stateless, so sharing it is not a global config).
  static RealClock* Get();
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : now_ms_(start_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  int64_t MonotonicMs() const override { return now_ms_.load(); }
  void AdvanceMs(int64_t ms) { now_ms_.fetch_add(ms); }
  void SetMs(int64_t ms) { now_ms_.store(ms); }
  void Advance(absl::Duration d) { AdvanceMs(absl::ToInt64Milliseconds(d)); }
  // Ends once Advance/SetMs has moved the clock `d` on (checked every real millisecond),
  // however little real time passed.
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, absl::Duration d,
               const std::function<bool()>& done) const override;

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace baton
