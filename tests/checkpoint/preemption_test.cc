// The preemption watcher: SIGUSR1 sets the flag, the grace clock starts at the signal, and
// ShouldStop answers the same on every rank (max over ranks).
#include "checkpoint/preemption.h"

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/thread_collective.h"

namespace baton::checkpoint {
namespace {

using ::testing::HasSubstr;
using testing::PeersCollective;

TEST(PreemptionWatcher, SignalSetsTheFlagAndStartsTheGraceClock) {
  auto watcher = PreemptionWatcher::Create({.grace_seconds = 30});
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  EXPECT_FALSE((*watcher)->StopRequested());
  EXPECT_FALSE((*watcher)->RemainingMs().has_value());
  ASSERT_EQ(std::raise(SIGUSR1), 0);
  EXPECT_TRUE((*watcher)->StopRequested());
  const std::optional<int64_t> left = (*watcher)->RemainingMs();
  ASSERT_TRUE(left.has_value());
  EXPECT_LE(*left, 30000);
  EXPECT_GT(*left, 25000);
}

TEST(PreemptionWatcher, ShouldStopIsTheMaxOverRanks) {
  auto watcher = *PreemptionWatcher::Create({.grace_seconds = 5});
  PeersCollective quiet(0), signaled_peer(1);
  EXPECT_FALSE(*watcher->ShouldStop(quiet));
  EXPECT_TRUE(*watcher->ShouldStop(signaled_peer)) << "a peer's signal stops this rank too";
  watcher->RequestStop();
  EXPECT_TRUE(*watcher->ShouldStop(quiet));
  LocalCollective local;
  EXPECT_TRUE(*watcher->ShouldStop(local));
}

TEST(PreemptionWatcher, GraceComesFromTheEnvironment) {
  ::setenv("BATON_GRACE_SECONDS", "45", 1);
  {
    auto watcher = PreemptionWatcher::Create();
    ASSERT_TRUE(watcher.ok());
    EXPECT_EQ((*watcher)->grace_seconds(), 45);
  }
  ::setenv("BATON_GRACE_SECONDS", "-3", 1);
  auto bad = PreemptionWatcher::Create();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("BATON_GRACE_SECONDS='-3'"));
  ::unsetenv("BATON_GRACE_SECONDS");
  auto none = PreemptionWatcher::Create();
  ASSERT_TRUE(none.ok());
  (*none)->RequestStop();
  EXPECT_FALSE((*none)->grace_seconds().has_value());
  EXPECT_FALSE((*none)->RemainingMs().has_value()) << "no grace period, no deadline";
}

TEST(PreemptionWatcher, OneWatcherPerProcessAndTheOldHandlerComesBack) {
  static volatile std::sig_atomic_t previous_calls = 0;
  struct sigaction counting {};
  counting.sa_handler = [](int) { previous_calls = previous_calls + 1; };
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGUSR1, &counting, &saved), 0);
  {
    auto first = PreemptionWatcher::Create({.grace_seconds = 1});
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(PreemptionWatcher::Create().status().code(), absl::StatusCode::kAlreadyExists);
    std::raise(SIGUSR1);
    EXPECT_EQ(previous_calls, 0);
  }
  std::raise(SIGUSR1);
  EXPECT_EQ(previous_calls, 1);
  ::sigaction(SIGUSR1, &saved, nullptr);
  EXPECT_TRUE(PreemptionWatcher::Create().ok());
}

}  // namespace
}  // namespace baton::checkpoint
