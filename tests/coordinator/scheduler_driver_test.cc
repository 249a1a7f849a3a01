#include "coordinator/scheduler_driver.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "tests/launcher/test_util.h"

namespace baton::testing {
namespace {

using launcher_testing::PollUntil;

// Counts ticks and passes; a pass takes `pass_cost` of the fake clock's time.
struct Counts {
  FakeClock clock;
  std::atomic<int> ticks{0}, passes{0};
  absl::Duration pass_cost = absl::ZeroDuration();
  SchedulerDriver driver{&clock,
                         {absl::Seconds(1), absl::Milliseconds(100)},
                         [this] { ++ticks; },
                         [this] {
                           clock.Advance(pass_cost);
                           ++passes;
                         }};
};

// On a fake clock, ticks follow its time alone: however long the real wait, no second
// tick until the clock has moved a tick interval.
TEST(SchedulerDriver, TicksFollowTheClockAndEachTickIsFollowedByAPass) {
  Counts c;
  c.driver.Start();
  ASSERT_TRUE(PollUntil([&] { return c.ticks == 1 && c.passes == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(c.ticks, 1) << "ticked on real time";
  EXPECT_EQ(c.passes, 1);
  c.clock.Advance(absl::Milliseconds(999));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(c.ticks, 1);
  c.clock.Advance(absl::Milliseconds(1));
  ASSERT_TRUE(PollUntil([&] { return c.ticks == 2 && c.passes == 2; }));
  c.driver.Stop();
}

// Changes within the spacing share one pass, run once the spacing (of the clock) is over;
// a long pass spaces the next ones out by twice its length.
TEST(SchedulerDriver, KicksWithinTheSpacingShareOnePassAndLongPassesSpaceTheNextOut) {
  Counts c;
  c.driver.Start();
  ASSERT_TRUE(PollUntil([&] { return c.passes == 1; }));
  for (int i = 0; i < 5; ++i) c.driver.Kick();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(c.passes, 1) << "a pass within min_pass_interval of the last";
  c.clock.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(PollUntil([&] { return c.passes == 2; })) << "the kicks' pass never ran";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(c.passes, 2) << "five kicks, more than one pass";
  // Only the first of them woke the driver's thread: the rest found a pass already wanted
  // (each submit kicks; a wake-up each was a context switch per submit).
  EXPECT_EQ(c.driver.kicks_woken(), 1u);

  c.pass_cost = absl::Milliseconds(300);  // the next pass takes 300 ms: 600 ms apart
  c.clock.Advance(absl::Milliseconds(100));
  c.driver.Kick();
  ASSERT_TRUE(PollUntil([&] { return c.passes == 3; }));
  c.pass_cost = absl::ZeroDuration();
  c.driver.Kick();
  c.clock.Advance(absl::Milliseconds(500));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(c.passes, 3) << "within twice the last pass's length";
  c.clock.Advance(absl::Milliseconds(100));
  ASSERT_TRUE(PollUntil([&] { return c.passes == 4; }));
  c.driver.Stop();
}

// Stop does not wait for the clock: a driver waiting out a long spacing stops at once.
TEST(SchedulerDriver, StopEndsAWaitAtOnce) {
  Counts c;
  c.driver.Start();
  ASSERT_TRUE(PollUntil([&] { return c.passes == 1; }));
  c.driver.Kick();  // waits for the fake clock, which never moves
  auto began = std::chrono::steady_clock::now();
  c.driver.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  EXPECT_EQ(c.passes, 1);
}

// The fake clock's wait ends on its time or the predicate, whichever first; the real
// one's on real time.
TEST(ClockWait, AFakeClocksWaitEndsWhenItIsAdvanced) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool flag = false;
  std::atomic<bool> returned{false}, result{true};
  std::thread waiter([&] {
    std::unique_lock<std::mutex> lock(mu);
    result = clock.WaitFor(cv, lock, absl::Hours(1), [&] { return flag; });
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(returned) << "returned before the clock moved";
  clock.Advance(absl::Hours(1));
  ASSERT_TRUE(PollUntil([&] { return returned.load(); }));
  waiter.join();
  EXPECT_FALSE(result);

  std::unique_lock<std::mutex> lock(mu);
  flag = true;
  EXPECT_TRUE(clock.WaitFor(cv, lock, absl::Hours(1), [&] { return flag; }));
  EXPECT_FALSE(RealClock::Get()->WaitFor(cv, lock, absl::Milliseconds(5), [] { return false; }));
}

}  // namespace
}  // namespace baton::testing
