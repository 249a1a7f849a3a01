// Process death: a child that saves in a loop is SIGKILLed at 120 random moments (most in
// its save loop, some while it starts or restores). Every next child must restore at least
// the newest step the previous one reported committed, bit-exact (the child checks its
// data and reports), and never anything partial.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>

#include "checkpoint/checkpoint.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_state.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

constexpr int kKills = 120;

struct ChildRun {
  std::string output;
  int64_t restored = -2;   // from "restored N"
  int64_t committed = -1;  // the last "committed N"
  bool bad = false;        // the child saw damaged or wrong data
  bool died_of_sigkill = false;
};

// When the delay before SIGKILL starts: at the child's start (the kill may land in its
// restore) or once it reported its restore (the kill lands in the save loop).
enum class KillClock { kFromStart, kAfterRestore };

void Parse(ChildRun* run) {
  std::istringstream lines(run->output);
  for (std::string word; lines >> word;) {
    if (word == "restored") lines >> run->restored;
    if (word == "committed") lines >> run->committed;
    if (word == "BAD" || word == "failed") run->bad = true;
  }
}

pid_t StartChild(const std::string& dir, int* out_fd) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const std::string helper = std::string(BATON_BIN_DIR) + "/checkpoint_crash_child";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::execl(helper.c_str(), helper.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

// Starts the child, SIGKILLs it `delay` after `clock` starts, collects what it printed.
ChildRun RunAndKill(const std::string& dir, std::chrono::milliseconds delay, KillClock clock) {
  using Clock = std::chrono::steady_clock;
  int fd = -1;
  const pid_t pid = StartChild(dir, &fd);
  ChildRun run;
  bool armed = clock == KillClock::kFromStart, killed = false;
  Clock::time_point deadline = Clock::now() + (armed ? delay : std::chrono::seconds(20));
  for (char buf[4096];;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (!killed && left <= 0) killed = ::kill(pid, SIGKILL) == 0;
    struct pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, killed ? -1 : static_cast<int>(std::max<int64_t>(left, 0))) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the child is gone
    run.output.append(buf, n);
    if (!armed && run.output.find("restored ") != std::string::npos) {
      armed = true;
      deadline = Clock::now() + delay;
    }
  }
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.died_of_sigkill = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  Parse(&run);
  return run;
}

TEST(KillNine, EveryRestartRestoresTheNewestCommittedStep) {
  testing::ScratchDir dir;
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(0, 80);
  int64_t acked = -1;
  for (int i = 0; i < kKills; ++i) {
    // One kill in eight may land while the child starts or restores.
    const KillClock clock = i % 8 == 0 ? KillClock::kFromStart : KillClock::kAfterRestore;
    const ChildRun run = RunAndKill(dir.path(), std::chrono::milliseconds(delay_ms(rng)), clock);
    const std::string where = "seed " + std::to_string(seed) + ", run " + std::to_string(i);
    ASSERT_TRUE(run.died_of_sigkill) << where << " ended on its own:\n" << run.output;
    ASSERT_FALSE(run.bad) << where << ":\n" << run.output;
    if (clock == KillClock::kAfterRestore) {
      ASSERT_NE(run.restored, -2) << where;
    }
    if (run.restored == -2) continue;  // killed before it finished restoring
    ASSERT_GE(run.restored, acked) << where << " lost step " << acked;
    ASSERT_LE(run.restored, acked + 1) << where;
    acked = std::max({acked, run.restored, run.committed});
  }
  EXPECT_GT(acked, kKills / 2) << "the children should have committed many steps";
  // A last restore, in this process, of what the final child left.
  LocalCollective collective;
  auto ckpt = *Checkpointer::Create({.dir = dir.path(), .keep_last = 2}, &collective);
  testing::TestState state({1 << 20, (300 << 10) + 5, 10});
  ASSERT_TRUE(state.Register(*ckpt).ok());
  auto restored = ckpt->RestoreLatest();
  ASSERT_TRUE(restored.ok() && restored->has_value()) << restored.status();
  EXPECT_GE((*restored)->step, acked);
  EXPECT_EQ(state.Mismatch((*restored)->step), "");
}

}  // namespace
}  // namespace baton::checkpoint
