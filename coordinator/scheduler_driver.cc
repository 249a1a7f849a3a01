#include "coordinator/scheduler_driver.h"

#include <algorithm>

namespace baton {

SchedulerDriver::SchedulerDriver(Clock* clock, Options options, std::function<void()> tick,
                                 std::function<void()> pass)
    : clock_(clock), options_(options), tick_(std::move(tick)), pass_(std::move(pass)) {}

SchedulerDriver::~SchedulerDriver() { Stop(); }

void SchedulerDriver::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void SchedulerDriver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SchedulerDriver::Kick() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Already dirty: the loop has not yet started the pass that will see this change (it
    // clears the flag first), and it waits only for the spacing or a tick. A wake-up here
    // would cost a context switch per change (each submit kicks) and change nothing.
    if (dirty_) return;
    dirty_ = true;
    ++kicks_woken_;
  }
  cv_.notify_one();
}

uint64_t SchedulerDriver::kicks_woken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kicks_woken_;
}

void SchedulerDriver::Loop() {
  absl::Time next_tick = absl::InfinitePast();
  absl::Time next_pass = absl::InfinitePast();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const absl::Time now = clock_->Monotonic();
    if (now >= next_tick) {
      lock.unlock();
      tick_();
      lock.lock();
      next_tick = now + options_.tick_interval;
      dirty_ = true;  // backoffs may have expired
    } else if (!dirty_) {
      clock_->WaitFor(cv_, lock, next_tick - now, [this] { return stopping_ || dirty_; });
    } else if (now < next_pass) {
      // Too soon after the last pass: wait out the spacing (or a tick), then one pass for
      // everything that changed meanwhile.
      clock_->WaitFor(cv_, lock, std::min(next_pass, next_tick) - now,
                      [this] { return stopping_; });
    } else {
      dirty_ = false;
      lock.unlock();
      const absl::Time started = clock_->Monotonic();
      pass_();
      const absl::Time ended = clock_->Monotonic();
      next_pass = ended + std::max(options_.min_pass_interval, 2 * (ended - started));
      lock.lock();
    }
  }
}

}  // namespace baton
