// StopPlan: the agent's stop and kill decisions, on times alone.
#include "launcher/agent/stop_plan.h"

#include <signal.h>

#include "gtest/gtest.h"

// Its own namespace: the unity build puts several tests' helpers in one unit.
namespace baton::stop_plan_test {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'000);
absl::Time At(int seconds) { return kT0 + absl::Seconds(seconds); }

void ExpectNow(const StopPlan::Now& got, int signal, bool ranks_only, bool kill, bool due) {
  EXPECT_EQ(got.signal, signal);
  EXPECT_EQ(got.ranks_only, ranks_only);
  EXPECT_EQ(got.kill, kill);
  EXPECT_EQ(got.due, due);
}

TEST(StopPlan, AStopSignalsNowAndKillsAtItsDeadlineWhichOnlyComesSooner) {
  StopPlan p;
  ExpectNow(p.Stop(SIGTERM, At(30), false, At(0)), SIGTERM, false, false, false);
  EXPECT_EQ(p.kill_at(), At(30));
  EXPECT_FALSE(p.KillDue(At(29)));
  ExpectNow(p.Stop(SIGTERM, At(60), false, At(1)), SIGTERM, false, false, false);
  EXPECT_EQ(p.kill_at(), At(30)) << "a later stop never delays the kill";
  ExpectNow(p.Stop(SIGINT, At(10), false, At(2)), SIGINT, false, false, false);
  EXPECT_EQ(p.kill_at(), At(10));
  EXPECT_TRUE(p.KillDue(At(10)));
  p.Clear();
  EXPECT_FALSE(p.KillDue(At(1'000'000)));
}

TEST(StopPlan, SigkillOrAPassedDeadlineKillsAtOnceWithNoSignalFirst) {
  StopPlan p;
  ExpectNow(p.Stop(SIGKILL, At(30), false, At(0)), 0, false, true, false);
  EXPECT_FALSE(p.KillDue(At(1'000))) << "killed: nothing pending";
  StopPlan q;
  ExpectNow(q.Stop(SIGTERM, At(0), false, At(0)), 0, false, true, false);
  StopPlan r;
  ExpectNow(r.Preempt(At(-1), At(0)), 0, false, true, false);
  EXPECT_TRUE(r.preempted());
}

TEST(StopPlan, AnEvictionSignalsTheRanksOnceAndItsDeadlineMovesBothWays) {
  StopPlan p;
  ExpectNow(p.Preempt(At(30), At(0)), SIGUSR1, true, false, false);
  EXPECT_TRUE(p.preempted());
  ExpectNow(p.Preempt(At(45), At(20)), 0, false, false, false);  // a checkpoint being written
  EXPECT_EQ(p.kill_at(), At(45)) << "the latest Preempt's deadline, later";
  ExpectNow(p.Preempt(At(40), At(21)), 0, false, false, false);
  EXPECT_EQ(p.kill_at(), At(40)) << "and sooner";
  // Due: the agent kills the group if any of it runs.
  ExpectNow(p.Preempt(At(21), At(22)), 0, false, false, true);
}

TEST(StopPlan, TheKillComesAtTheEarlierOfTheStopsAndTheEvictions) {
  StopPlan p;
  p.Preempt(At(30), At(0));
  ExpectNow(p.Stop(SIGTERM, At(50), false, At(1)), SIGTERM, false, false, false);
  EXPECT_EQ(p.kill_at(), At(30));
  p.Preempt(At(90), At(2));
  EXPECT_EQ(p.kill_at(), At(50)) << "the eviction moved later: the stop's deadline holds";
  ExpectNow(p.Stop(SIGUSR2, At(5), true, At(3)), SIGUSR2, true, false, false);
  EXPECT_EQ(p.kill_at(), At(5));
}

TEST(StopPlan, ALostCoordinatorStopsAnAttemptOncePastItsOwnBound) {
  StopPlan p;
  EXPECT_FALSE(p.StopForDisconnect(absl::Seconds(20), absl::Seconds(20))) << "not before";
  EXPECT_TRUE(p.StopForDisconnect(absl::Seconds(21), absl::Seconds(20)));
  EXPECT_FALSE(p.StopForDisconnect(absl::Seconds(90), absl::Seconds(20))) << "once";
  StopPlan service;
  EXPECT_FALSE(service.StopForDisconnect(absl::Hours(24), absl::ZeroDuration())) << "never";
}

}  // namespace
}  // namespace baton::stop_plan_test
