#include "common/clock.h"

#include <algorithm>
#include <chrono>

namespace baton {

int64_t RealClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t RealClock::MonotonicMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool RealClock::WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                        absl::Duration d, const std::function<bool()>& done) const {
  if (d == absl::InfiniteDuration()) {
    cv.wait(lock, done);
    return true;
  }
  return cv.wait_for(lock, absl::ToChronoNanoseconds(std::max(d, absl::ZeroDuration())), done);
}

bool FakeClock::WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                        absl::Duration d, const std::function<bool()>& done) const {
  const absl::Time until = Monotonic() + d;
  while (!done()) {
    if (Monotonic() >= until) return false;
    cv.wait_for(lock, std::chrono::milliseconds(1));
  }
  return true;
}

RealClock* RealClock::Get() {
  static RealClock clock;
  return &clock;
}

}  // namespace baton
