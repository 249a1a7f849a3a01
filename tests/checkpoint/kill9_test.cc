// Process death: a child that saves in a loop is SIGKILLed at 120 random moments. Every
// next child must restore at least the newest step the previous one reported committed,
// bit-exact (the child checks its data and reports), and never anything partial.
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
};

// Starts the child, kills it after `delay`, and collects everything it printed.
ChildRun RunAndKill(const std::string& dir, std::chrono::milliseconds delay) {
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
  ChildRun run;
  const auto deadline = std::chrono::steady_clock::now() + delay;
  char buf[4096];
  bool killed = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!killed && left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    if (::poll(&p, 1, killed ? -1 : static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;  // EOF: the child is gone
    run.output.append(buf, n);
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::istringstream lines(run.output);
  for (std::string word; lines >> word;) {
    if (word == "restored") lines >> run.restored;
    if (word == "committed") lines >> run.committed;
    if (word == "BAD" || word == "failed") run.bad = true;
  }
  return run;
}

TEST(KillNine, EveryRestartRestoresTheNewestCommittedStep) {
  testing::ScratchDir dir;
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(0, 150);
  int64_t acked = -1;
  int kills_during_saves = 0;
  for (int i = 0; i < kKills; ++i) {
    const ChildRun run = RunAndKill(dir.path(), std::chrono::milliseconds(delay_ms(rng)));
    ASSERT_FALSE(run.bad) << "seed " << seed << ", run " << i << ":\n" << run.output;
    if (run.restored == -2) continue;  // killed before it finished restoring
    ASSERT_GE(run.restored, acked) << "seed " << seed << ", run " << i << " lost step " << acked;
    ASSERT_LE(run.restored, acked + 1) << "seed " << seed << ", run " << i;
    if (run.committed >= 0) ++kills_during_saves;
    acked = std::max({acked, run.restored, run.committed});
  }
  EXPECT_GT(kills_during_saves, kKills / 2) << "most kills should land while saving";
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
