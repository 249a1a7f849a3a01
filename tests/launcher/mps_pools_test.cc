// The agent's MPS pools against a fake nvidia-cuda-mps-control (tests/launcher/
// fake_mps_control.sh, real child processes): one daemon per pool for many shares, stopped
// after the last; the server's limits the sum of the shares, set as defaults and on a
// running server; a client's environment; a daemon that died started again; a daemon that
// will not start holds nothing.
#include "launcher/agent/mps/mps_pools.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace baton {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

const std::string kFake = std::string(BATON_SOURCE_DIR) + "/tests/launcher/fake_mps_control.sh";
constexpr uint64_t kGi = 1ull << 30;

class MpsPoolsTest : public ::testing::Test {
 protected:
  MpsPools Pools(const std::string& control = kFake) {
    return MpsPools(dir_.path() + "/mps", std::make_unique<RealCommandRunner>(), control);
  }
  // What the fake control recorded for a pool, line by line.
  std::vector<std::string> Log(const MpsPools& pools, const std::string& uuid) {
    std::ifstream in(pools.LogDir(uuid) + "/fake-control.log");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  pid_t DaemonPid(const MpsPools& pools, const std::string& uuid) {
    std::ifstream in(pools.PipeDir(uuid) + "/nvidia-cuda-mps-control.pid");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }
  // Waits up to 10 s: a loaded or sanitized run is slow to see the daemon exit (its
  // adopter reaps it).
  static bool Gone(pid_t pid) {
    for (int i = 0; i < 1000; ++i) {
      if (pid <= 0 || ::kill(pid, 0) != 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  testing::TempDir dir_;
};

TEST_F(MpsPoolsTest, OneDaemonForManySharesItsLimitsTheirSumStoppedAfterTheLast) {
  MpsPools pools = Pools();
  auto env = pools.Acquire(1, 1, {"GPU-a", 25, 20 * kGi});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->at("CUDA_MPS_PIPE_DIRECTORY"), pools.PipeDir("GPU-a"));
  EXPECT_EQ(env->at("CUDA_MPS_LOG_DIRECTORY"), pools.LogDir("GPU-a"));
  EXPECT_EQ(env->at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(env->at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480M");
  const pid_t daemon = DaemonPid(pools, "GPU-a");
  ASSERT_GT(daemon, 0);
  ASSERT_TRUE(pools.Acquire(2, 1, {"GPU-a", 30, 10 * kGi}).ok());
  EXPECT_EQ(DaemonPid(pools, "GPU-a"), daemon) << "one daemon for the pool";
  ASSERT_TRUE(pools.Release(1, 1).ok());
  EXPECT_EQ(::kill(daemon, 0), 0) << "a share is left";
  ASSERT_TRUE(pools.Release(2, 1).ok());
  EXPECT_TRUE(Gone(daemon)) << "stopped after the last share";
  EXPECT_THAT(Log(pools, "GPU-a"),
              ElementsAre("start gpu=GPU-a",                               //
                          "set_default_active_thread_percentage 25",       //
                          "set_default_device_pinned_mem_limit 0 20480M",  //
                          "get_server_list",                               //
                          "set_default_active_thread_percentage 55",       //
                          "set_default_device_pinned_mem_limit 0 30720M",  //
                          "get_server_list",                               //
                          "set_default_active_thread_percentage 30",       //
                          "set_default_device_pinned_mem_limit 0 10240M",  //
                          "get_server_list",                               //
                          "quit"));
}

TEST_F(MpsPoolsTest, ARunningServerGetsTheLimitsOnTheDaemonsSide) {
  MpsPools pools = Pools();
  ASSERT_TRUE(pools.Acquire(1, 1, {"GPU-a", 40, 8 * kGi}).ok());
  std::ofstream(pools.PipeDir("GPU-a") + "/fake-servers") << "4242\n";
  ASSERT_TRUE(pools.Acquire(2, 1, {"GPU-a", 20, 2 * kGi}).ok());
  std::vector<std::string> log = Log(pools, "GPU-a");
  EXPECT_THAT(log, Contains("set_active_thread_percentage 4242 60"));
  EXPECT_THAT(log, Contains("set_device_pinned_mem_limit 4242 0 10240M"));
  ASSERT_TRUE(pools.Release(1, 1).ok());
  EXPECT_THAT(Log(pools, "GPU-a"), Contains("set_active_thread_percentage 4242 20"));
  ASSERT_TRUE(pools.Release(2, 1).ok());
}

TEST_F(MpsPoolsTest, EachPoolHasItsOwnDaemonAndDirectories) {
  MpsPools pools = Pools();
  ASSERT_TRUE(pools.Acquire(1, 1, {"GPU-a", 50, kGi}).ok());
  ASSERT_TRUE(pools.Acquire(2, 1, {"GPU-b", 50, kGi}).ok());
  EXPECT_NE(DaemonPid(pools, "GPU-a"), DaemonPid(pools, "GPU-b"));
  EXPECT_EQ(Log(pools, "GPU-b").front(), "start gpu=GPU-b");
  ASSERT_TRUE(pools.Release(1, 1).ok());
  ASSERT_TRUE(pools.Release(2, 1).ok());
}

TEST_F(MpsPoolsTest, ADaemonThatDiedIsStartedAgainAndItsSharesAreNamed) {
  MpsPools pools = Pools();
  ASSERT_TRUE(pools.Acquire(7, 2, {"GPU-a", 50, kGi}).ok());
  const pid_t daemon = DaemonPid(pools, "GPU-a");
  EXPECT_TRUE(pools.Check().empty()) << "a live daemon is left alone";
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  ASSERT_TRUE(Gone(daemon));
  std::vector<std::pair<uint64_t, uint32_t>> hit = pools.Check();
  EXPECT_THAT(hit, ElementsAre(std::pair<uint64_t, uint32_t>{7, 2}));
  EXPECT_NE(DaemonPid(pools, "GPU-a"), daemon);
  std::vector<std::string> log = Log(pools, "GPU-a");
  EXPECT_EQ(std::count(log.begin(), log.end(), "start gpu=GPU-a"), 2);
  EXPECT_EQ(log.back(), "get_server_list") << "its limits set again";
  ASSERT_TRUE(pools.Release(7, 2).ok());
}

// A daemon that died but is not reaped yet (a zombie: its parent, init for a detached
// daemon, may reap late) still answers kill(pid, 0); it is dead all the same.
TEST_F(MpsPoolsTest, ADeadDaemonNotYetReapedIsDead) {
  MpsPools pools = Pools();
  ASSERT_TRUE(pools.Acquire(7, 2, {"GPU-a", 50, kGi}).ok());
  const pid_t zombie = fork();  // exits at once and is not reaped until the end
  ASSERT_GE(zombie, 0);
  if (zombie == 0) _exit(0);
  bool dead = false;
  for (int i = 0; i < 500 && !dead; ++i) {
    std::ifstream stat("/proc/" + std::to_string(zombie) + "/stat");
    std::string line;
    std::getline(stat, line);
    dead = line.find(") Z") != std::string::npos;
    if (!dead) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(dead) << "the child never became a zombie";
  ASSERT_EQ(::kill(zombie, 0), 0) << "a zombie answers kill(0)";
  const pid_t daemon = DaemonPid(pools, "GPU-a");
  std::ofstream(pools.PipeDir("GPU-a") + "/nvidia-cuda-mps-control.pid")
      << zombie << "\n";  // the pool's daemon is now one that died
  EXPECT_THAT(pools.Check(), ElementsAre(std::pair<uint64_t, uint32_t>{7, 2}));
  EXPECT_NE(DaemonPid(pools, "GPU-a"), zombie) << "started again";
  waitpid(zombie, nullptr, 0);
  ::kill(daemon, SIGKILL);  // the first daemon, no longer the pool's
  ASSERT_TRUE(pools.Release(7, 2).ok());
}

TEST_F(MpsPoolsTest, AReadoptedAttemptKeepsOneShare) {
  MpsPools pools = Pools();
  ASSERT_TRUE(pools.Acquire(1, 1, {"GPU-a", 30, kGi}).ok());
  ASSERT_TRUE(pools.Acquire(1, 1, {"GPU-a", 30, kGi}).ok());
  EXPECT_THAT(Log(pools, "GPU-a"), Contains("set_default_active_thread_percentage 30"));
  EXPECT_THAT(Log(pools, "GPU-a"),
              ::testing::Not(Contains("set_default_active_thread_percentage 60")));
  ASSERT_TRUE(pools.Release(1, 1).ok());
  EXPECT_EQ(Log(pools, "GPU-a").back(), "quit");
}

TEST_F(MpsPoolsTest, ADaemonThatWillNotStartHoldsNothing) {
  MpsPools pools = Pools("false");
  auto env = pools.Acquire(1, 1, {"GPU-a", 30, kGi});
  EXPECT_EQ(env.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(env.status().message()), ::testing::HasSubstr("did not start"));
  EXPECT_TRUE(pools.Check().empty()) << "no share was kept";
  EXPECT_EQ(pools.Acquire(1, 1, {"GPU-a", 0, kGi}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace baton
