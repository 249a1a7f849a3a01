// The coordinator's periodic work on one thread: a tick every tick_interval (leases,
// runtimes, backoffs: each tick is followed by a pass) and a scheduling pass after
// changes (Kick). Bursts of changes share a pass: passes start at least
// max(min_pass_interval, twice the last pass's length) apart, so that they take at most
// about a third of a core however long the queue grows. Time is the given clock's: on a
// fake clock, ticks and spacing follow its Advance. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "common/clock.h"

namespace baton {

class SchedulerDriver {
 public:
  struct Options {
    absl::Duration tick_interval = absl::Milliseconds(250);
    absl::Duration min_pass_interval = absl::Milliseconds(20);
  };
  // `tick` and `pass` run on the driver's thread, never at once.
  SchedulerDriver(Clock* clock, Options options, std::function<void()> tick,
                  std::function<void()> pass);
  ~SchedulerDriver();
  SchedulerDriver(const SchedulerDriver&) = delete;
  SchedulerDriver& operator=(const SchedulerDriver&) = delete;

  void Start();
  // Waits for a tick or pass under way; none starts after.
  void Stop();
  // Something changed: a pass runs as soon as the spacing allows. Cheap when a pass is
  // already wanted (no wake-up: every submit kicks).
  void Kick();
  // How many Kicks woke the driver's thread (tests).
  uint64_t kicks_woken() const;

 private:
  void Loop();

  Clock* const clock_;
  const Options options_;
  const std::function<void()> tick_, pass_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t kicks_woken_ = 0;
  bool dirty_ = true;  // a pass is wanted
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace baton
