// Time, injected: every component that reads the clock takes a Clock*, so tests and the
// scheduler run on simulated time. RealClock is thread-safe; FakeClock too.
#pragma once

#include <atomic>
#include <cstdint>

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
};

class RealClock final : public Clock {
 public:
  int64_t NowMs() const override;
  int64_t MonotonicMs() const override;
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

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace baton
