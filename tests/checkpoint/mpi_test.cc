// Two real MPI ranks under mpirun (the MPI adapter, SaveAsync on MPI_THREAD_MULTIPLE). Only
// rank 1 gets SIGUSR1: both ranks must stop and save the same step. A restore after rank
// 1's shard of that step is damaged must take the previous step on both ranks.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/checkpoint/test_util.h"

namespace baton::checkpoint {
namespace {

using ::testing::ElementsAre;

struct MpiRun {
  int exit_code = -1;
  std::string output;
  std::map<std::string, std::vector<int64_t>> by_event;  // "stopped step" -> per rank
};

// Runs the worker under `mpirun -np 2`; on_line sees each stdout line as it arrives.
MpiRun RunMpi(const std::string& dir, const std::string& mode,
              const std::function<void(const std::string&)>& on_line) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const std::string worker = std::string(BATON_BIN_DIR) + "/checkpoint_mpi_worker";
  std::vector<std::string> args = {BATON_MPIEXEC,
                                   "-np",
                                   "2",
                                   "--allow-run-as-root",
                                   "--oversubscribe",
                                   "--bind-to",
                                   "none",
                                   "--mca",
                                   "btl",
                                   "self,tcp",
                                   "--mca",
                                   "btl_tcp_if_include",
                                   "lo",
                                   "--mca",
                                   "oob_tcp_if_include",
                                   "lo",
                                   worker,
                                   dir,
                                   mode};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  MpiRun run;
  std::string pending;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) {
    pending.append(buf, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      run.output += line + "\n";
      on_line(line);
    }
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    int rank = -1;
    char event[32] = {};
    long long value = 0;
    if (std::sscanf(line.c_str(), "rank %d %31[a-z ]%lld", &rank, event, &value) == 3 &&
        (rank == 0 || rank == 1)) {
      auto& slot = run.by_event[event];
      slot.resize(2, -100);
      slot[rank] = value;
    }
  }
  return run;
}

TEST(MpiCheckpoint, SignalToRankOneStopsBothAtTheSameStep) {
  testing::ScratchDir dir;
  pid_t rank1 = 0;
  bool signaled = false;
  const MpiRun train = RunMpi(dir.path(), "train", [&](const std::string& line) {
    int pid = 0;
    if (std::sscanf(line.c_str(), "rank 1 pid %d ready", &pid) == 1) rank1 = pid;
    long long step = 0;
    // Signal once a few async saves have committed, in the middle of training.
    if (!signaled && rank1 > 0 && std::sscanf(line.c_str(), "rank 1 at step %lld", &step) == 1 &&
        step >= 15) {
      ASSERT_EQ(::kill(rank1, SIGUSR1), 0);
      signaled = true;
    }
  });
  ASSERT_EQ(train.exit_code, 0) << train.output;
  ASSERT_TRUE(signaled) << train.output;
  ASSERT_EQ(train.by_event.count("stopped step "), 1u) << train.output;
  const std::vector<int64_t> stopped = train.by_event.at("stopped step ");
  EXPECT_EQ(stopped[0], stopped[1]) << train.output;
  const int64_t step = stopped[1];
  EXPECT_GE(step, 15);

  MpiRun again = RunMpi(dir.path(), "restore", [](const std::string&) {});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.by_event["restored "], ElementsAre(step, step)) << again.output;

  // Rank 1's shard of the newest step goes bad: both ranks take the previous save.
  testing::FlipByte(dir.path() + "/step-" + std::to_string(step) + "/rank-1.shard", 4096 + 99);
  MpiRun fallback = RunMpi(dir.path(), "restore", [](const std::string&) {});
  ASSERT_EQ(fallback.exit_code, 0) << fallback.output;
  const int64_t previous = (step - 1) / 5 * 5;
  EXPECT_THAT(fallback.by_event["restored "], ElementsAre(previous, previous)) << fallback.output;
}

}  // namespace
}  // namespace baton::checkpoint
