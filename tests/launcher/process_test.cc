// Spawn and the Reaper against real children. The Reaper reaps every child of the
// process, so the whole binary shares one (as the agent does) and never destroys it.
#include "launcher/agent/process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/isolation/self_affinity.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::PollUntil;
using launcher_testing::ReadFile;
using launcher_testing::ScratchDir;
using launcher_testing::WaitUntil;
using launcher_testing::WriteFile;
using ::testing::HasSubstr;
using ::testing::Not;

Reaper& SharedReaper() {
  static Reaper* reaper = new Reaper();  // lives as long as the process
  return *reaper;
}

// Collects exit callbacks by pid.
class Exits {
 public:
  Reaper::Callback Callback() {
    return [this](pid_t pid, ExitStatus st) {
      std::lock_guard<std::mutex> lock(mu_);
      statuses_[pid] = st;
      ++calls_[pid];
      cv_.notify_all();
    };
  }
  // The status of `pid` once reaped; fails the test after the deadline.
  ExitStatus Wait(pid_t pid) {
    std::unique_lock<std::mutex> lock(mu_);
    bool reaped = WaitUntil(cv_, lock, [&] { return statuses_.count(pid) > 0; });
    EXPECT_TRUE(reaped) << "pid " << pid << " was not reaped";
    return reaped ? statuses_[pid] : ExitStatus{-1, -1};
  }
  bool WaitCount(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return WaitUntil(cv_, lock, [&] { return calls_.size() >= n; });
  }
  std::map<pid_t, int> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<pid_t, ExitStatus> statuses_;
  std::map<pid_t, int> calls_;
};

std::string PathEnv() {
  const char* p = getenv("PATH");
  return std::string("PATH=") + (p ? p : "/usr/bin:/bin");
}

// Children of this process that are zombies (exited, not yet reaped).
std::vector<pid_t> ZombieChildren() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadFile(e.path().string() + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2) continue;
    if (ppid == getpid() && state == 'Z') out.push_back(std::stoi(name));
  }
  return out;
}

// Every test runs twice: a child forked from this process, and one started by
// baton-keeper (an exit_dir), as the agent starts every job process.
// `argv` in `dir`, its output in dir/out.log; kept: under a keeper recording in `dir`.
SpawnOptions OptionsIn(const ScratchDir& dir, bool kept, std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  o.env = {PathEnv()};
  o.cwd = dir.path();
  o.log_path = dir.Sub("out.log");
  if (kept) o.exit_dir = dir.path();
  return o;
}

class ProcessTest : public ::testing::TestWithParam<bool> {
 protected:
  bool kept() const { return GetParam(); }
  SpawnOptions Options(std::vector<std::string> argv) {
    return OptionsIn(dir_, kept(), std::move(argv));
  }
  pid_t SpawnOk(const SpawnOptions& o) {
    auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
    EXPECT_TRUE(pid.ok()) << pid.status();
    return pid.ok() ? *pid : -1;
  }

  ScratchDir dir_;
  Exits exits_;
};

TEST_P(ProcessTest, ReportsTheExitCode) {
  pid_t pid = SpawnOk(Options({"sh", "-c", "exit 7"}));
  ExitStatus st = exits_.Wait(pid);
  EXPECT_EQ(st.exit_code, 7);
  EXPECT_EQ(st.term_signal, 0);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(exits_.Wait(SpawnOk(Options({"true"}))).ok());
}

TEST_P(ProcessTest, AJobStartsFromEveryCpuWhateverTheAgentsOwnAffinity) {
  // The agent keeps its own threads off inference's cores (SelfAffinity); a rank it
  // spawns must not inherit that: its cgroup's cpuset decides (none here: every CPU).
  unsigned n = std::thread::hardware_concurrency();
  if (n < 2) GTEST_SKIP() << "needs two CPUs";
  std::vector<uint32_t> all;
  for (uint32_t c = 0; c < n; ++c) all.push_back(c);
  SelfAffinity self(all, {0});
  ASSERT_TRUE(self.Apply({}).ok());
  pid_t pid = SpawnOk(Options({"sh", "-c", "grep Cpus_allowed_list: /proc/self/status"}));
  ExitStatus st = exits_.Wait(pid);
  ASSERT_TRUE(SelfAffinity(all, all).Apply({}).ok());  // this process gets every CPU back
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(ReadFile(dir_.Sub("out.log")), "Cpus_allowed_list:\t0-" + std::to_string(n - 1) + "\n");
}

TEST_P(ProcessTest, AJobTakesItsBindingTheCpusAndTheMemoryPolicyBeforeExec) {
  unsigned n = std::thread::hardware_concurrency();
  if (n < 2) GTEST_SKIP() << "needs two CPUs";
  if (access("/proc/self/numa_maps", R_OK) != 0) GTEST_SKIP() << "no NUMA support here";
  SpawnOptions o = Options({"sh", "-c",
                            "grep Cpus_allowed_list: /proc/self/status; "
                            "grep -c ' bind:0 ' /proc/self/numa_maps; true"});
  o.binding = ProcessBinding{{n - 1}, {0}};
  ASSERT_TRUE(exits_.Wait(SpawnOk(o)).ok());
  std::string out = ReadFile(dir_.Sub("out.log"));
  EXPECT_EQ(out.substr(0, out.find('\n')), "Cpus_allowed_list:\t" + std::to_string(n - 1));
  EXPECT_NE(out.substr(out.find('\n') + 1), "0\n") << "its memory is bound to node 0: " << out;
}

TEST_P(ProcessTest, ABindingTheKernelRefusesFailsTheSpawnNamingIt) {
  SpawnOptions o = Options({"true"});
  o.binding = ProcessBinding{{}, {1000}};  // no such NUMA node
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("bind memory to NUMA nodes 1000"), std::string::npos)
      << pid.status();
}

TEST_P(ProcessTest, ReportsTheSignalThatKilledIt) {
  pid_t pid = SpawnOk(Options({"sh", "-c", "kill -KILL $$"}));
  ExitStatus st = exits_.Wait(pid);
  EXPECT_EQ(st.term_signal, SIGKILL);
  EXPECT_FALSE(st.ok());
}

TEST_P(ProcessTest, StdoutAndStderrAreAppendedToTheLog) {
  WriteFile(dir_.Sub("out.log"), "earlier line\n");
  pid_t pid = SpawnOk(Options({"sh", "-c", "echo to-stdout; echo to-stderr >&2"}));
  ASSERT_TRUE(exits_.Wait(pid).ok());
  EXPECT_EQ(ReadFile(dir_.Sub("out.log")), "earlier line\nto-stdout\nto-stderr\n");
}

TEST_P(ProcessTest, StdinIsEmpty) {
  pid_t pid = SpawnOk(Options({"sh", "-c", "cat; echo done"}));
  ASSERT_TRUE(exits_.Wait(pid).ok());
  EXPECT_EQ(ReadFile(dir_.Sub("out.log")), "done\n");
}

// Descriptors >= 3 this process would pass to any child (open without FD_CLOEXEC).
std::set<int> InheritableDescriptors() {
  std::set<int> fds;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(e.path().filename());
    int flags = fcntl(fd, F_GETFD);
    if (fd > 2 && flags >= 0 && !(flags & FD_CLOEXEC)) fds.insert(fd);
  }
  return fds;
}

TEST_P(ProcessTest, ChildGetsOnlyStdioFromSpawn) {
  pid_t pid = SpawnOk(Options({"sh", "-c", "ls /proc/$$/fd"}));
  ASSERT_TRUE(exits_.Wait(pid).ok());
  // A forked child gets what this process leaves inheritable (not Spawn's to close); the
  // keeper closes everything but its own.
  std::set<int> expected = kept() ? std::set<int>() : InheritableDescriptors();
  expected.insert({0, 1, 2});
  std::set<int> got;
  std::istringstream in(ReadFile(dir_.Sub("out.log")));
  for (std::string line; std::getline(in, line);) got.insert(std::stoi(line));
  EXPECT_EQ(got, expected);
}

TEST_P(ProcessTest, RunsInTheGivenDirectory) {
  std::filesystem::create_directories(dir_.Sub("work/here"));
  SpawnOptions o = Options({"pwd", "-P"});
  o.cwd = dir_.Sub("work/here");
  ASSERT_TRUE(exits_.Wait(SpawnOk(o)).ok());
  EXPECT_EQ(ReadFile(dir_.Sub("out.log")), dir_.Sub("work/here") + "\n");
}

TEST_P(ProcessTest, EnvironmentIsExactlyTheOneGiven) {
  ASSERT_EQ(setenv("BATON_TEST_MUST_NOT_LEAK", "1", 1), 0);
  SpawnOptions o = Options({"env"});
  o.env = {PathEnv(), "ALPHA=1", "WITH_SPACE=a b", "EMPTY="};
  pid_t pid = SpawnOk(o);
  ASSERT_TRUE(exits_.Wait(pid).ok());
  unsetenv("BATON_TEST_MUST_NOT_LEAK");
  std::set<std::string> lines;
  std::istringstream in(ReadFile(dir_.Sub("out.log")));
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines, (std::set<std::string>{PathEnv(), "ALPHA=1", "WITH_SPACE=a b", "EMPTY="}));
}

TEST_P(ProcessTest, ProgramIsLookedUpInTheChildsPath) {
  // Jobs set PATH in spec.env (a venv, a conda env): that PATH must find argv[0], not the
  // agent's own.
  WriteFile(dir_.Sub("bin/baton-probe-tool"), "#!/bin/sh\necho probe ran\n");
  std::filesystem::permissions(dir_.Sub("bin/baton-probe-tool"), std::filesystem::perms::owner_all);
  SpawnOptions o = Options({"baton-probe-tool"});
  o.env = {"PATH=" + dir_.Sub("bin") + ":/usr/bin:/bin"};
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_TRUE(exits_.Wait(*pid).ok());
  EXPECT_EQ(ReadFile(dir_.Sub("out.log")), "probe ran\n");
}

TEST_P(ProcessTest, MissingProgramIsNotFoundNamingItAndLeavesNoZombie) {
  Exits unused;
  auto pid = SharedReaper().SpawnAndWatch(Options({"baton-no-such-program"}), unused.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(pid.status().message()), HasSubstr("baton-no-such-program"));
  // The failed child exits with 127; the reaper must collect it.
  EXPECT_TRUE(PollUntil([] { return ZombieChildren().empty(); })) << "zombie children left";
  EXPECT_TRUE(unused.calls().empty()) << "a failed spawn must not call on_exit";
}

TEST_P(ProcessTest, MissingWorkingDirectoryIsAnErrorNamingIt) {
  SpawnOptions o = Options({"true"});
  o.cwd = dir_.Sub("no/such/dir");
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(std::string(pid.status().message()), HasSubstr(dir_.Sub("no/such/dir")));
  EXPECT_THAT(std::string(pid.status().message()), Not(HasSubstr("exec")));
}

TEST_P(ProcessTest, UnwritableLogIsAnErrorNamingIt) {
  SpawnOptions o = Options({"true"});
  o.log_path = dir_.Sub("no/such/dir/out.log");
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(std::string(pid.status().message()), HasSubstr(o.log_path));
}

TEST_P(ProcessTest, EmptyCommandIsInvalid) {
  auto pid = SharedReaper().SpawnAndWatch(Options({}), exits_.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ProcessTest, ChildLeadsItsOwnProcessGroupAndASecondOneJoinsIt) {
  pid_t leader = SpawnOk(Options({"sleep", "30"}));
  ASSERT_GT(leader, 0);
  EXPECT_EQ(getpgid(leader), leader);
  EXPECT_NE(getpgid(leader), getpgrp());
  SpawnOptions o = Options({"sleep", "30"});
  o.process_group = leader;
  pid_t member = SpawnOk(o);
  ASSERT_GT(member, 0);
  EXPECT_EQ(getpgid(member), leader);
  // One signal to the group ends both.
  ASSERT_EQ(kill(-leader, SIGKILL), 0);
  EXPECT_EQ(exits_.Wait(leader).term_signal, SIGKILL);
  EXPECT_EQ(exits_.Wait(member).term_signal, SIGKILL);
}

TEST_P(ProcessTest, StopSignalsAreUnblockedInTheChild) {
  // The agent blocks stop signals in its threads; the job must still die of SIGTERM.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  pid_t pid = SpawnOk(Options({"sleep", "30"}));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  EXPECT_EQ(exits_.Wait(pid).term_signal, SIGTERM);
}

TEST_P(ProcessTest, IgnoredSignalsAreRestoredToDefaultInTheChild) {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGINT, &ign, &old), 0);
  pid_t pid = SpawnOk(Options({"sleep", "30"}));
  sigaction(SIGINT, &old, nullptr);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGINT), 0);
  EXPECT_EQ(exits_.Wait(pid).term_signal, SIGINT);
}

TEST_P(ProcessTest, ManyQuickChildrenAreEachReapedOnce) {
  constexpr int kChildren = 200;
  std::set<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    auto pid = SharedReaper().SpawnAndWatch(Options({"true"}), exits_.Callback());
    ASSERT_TRUE(pid.ok()) << pid.status();
    pids.insert(*pid);
  }
  ASSERT_EQ(pids.size(), static_cast<size_t>(kChildren));
  ASSERT_TRUE(exits_.WaitCount(kChildren));
  // One more child after them: by the time it is reaped, any duplicate would have shown.
  exits_.Wait(SpawnOk(Options({"true"})));
  auto calls = exits_.calls();
  EXPECT_EQ(calls.size(), static_cast<size_t>(kChildren + 1));
  for (pid_t pid : pids) EXPECT_EQ(calls[pid], 1) << "pid " << pid;
}

TEST_P(ProcessTest, ConcurrentSpawnsFromSeveralThreadsAreAllReaped) {
  constexpr int kThreads = 4, kEach = 25;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<pid_t> pids;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto pid = SharedReaper().SpawnAndWatch(
            Options({"sh", "-c", "exit " + std::to_string(t + 1)}), exits_.Callback());
        if (!pid.ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        pids.insert(*pid);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(pids.size(), static_cast<size_t>(kThreads * kEach));
  for (pid_t pid : pids) {
    ExitStatus st = exits_.Wait(pid);
    EXPECT_GE(st.exit_code, 1);
    EXPECT_LE(st.exit_code, kThreads);
  }
}

// What only a kept child has: the keeper itself.
class KeeperTest : public ::testing::Test {
 protected:
  SpawnOptions Options(std::vector<std::string> argv) {
    return OptionsIn(dir_, true, std::move(argv));
  }
  ScratchDir dir_;
  Exits exits_;
};

std::string Proc(pid_t pid, const std::string& what) {
  return "/proc/" + std::to_string(pid) + "/" + what;
}

TEST_F(KeeperTest, IsItsOwnSmallProgramNotACopyOfTheSpawnerAndSeesNothingOfTheJobsEnvironment) {
  SpawnOptions o = Options({"sleep", "30"});
  o.env = {PathEnv(), "GLIBC_TUNABLES=glibc.malloc.perturb=85", "BATON_JOB_VALUE=1"};
  pid_t keeper = 0;
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback(), &keeper);
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_GT(keeper, 0);
  ASSERT_NE(keeper, *pid);
  // Not a fork of this process: its program is baton-keeper (forked from the zygote, which
  // started by exec), and it runs as root with an empty environment, so no variable of the
  // job's can steer it.
  EXPECT_EQ(std::filesystem::read_symlink(Proc(keeper, "exe")).string(), KeeperProgram());
  EXPECT_EQ(ReadFile(Proc(keeper, "environ")), "");
  EXPECT_TRUE(PollUntil([&] {
    return ReadFile(Proc(*pid, "environ")).find("BATON_JOB_VALUE=1") != std::string::npos;
  })) << "the job's environment did not reach the job";
  std::string stat = ReadFile(Proc(*pid, "stat"));
  int ppid = 0;
  char state = 0;
  ASSERT_EQ(sscanf(stat.c_str() + stat.rfind(')') + 1, " %c %d", &state, &ppid), 2);
  EXPECT_EQ(ppid, keeper);
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  EXPECT_EQ(exits_.Wait(*pid).term_signal, SIGKILL);
  std::optional<ExitStatus> recorded = ReadExitFile(dir_.path(), *pid);
  ASSERT_TRUE(recorded.has_value()) << "no exit record from the keeper";
  EXPECT_EQ(recorded->term_signal, SIGKILL);
}

TEST_F(KeeperTest, RecordsTheExitCodeWhereARestartedAgentFindsIt) {
  auto pid = SharedReaper().SpawnAndWatch(Options({"sh", "-c", "exit 7"}), exits_.Callback());
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(exits_.Wait(*pid).exit_code, 7);
  std::optional<ExitStatus> recorded = ReadExitFile(dir_.path(), *pid);
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->exit_code, 7);
  EXPECT_EQ(recorded->term_signal, 0);
}

TEST_F(KeeperTest, AMissingKeeperProgramIsAnErrorNamingItAndLeavesNoZombie) {
  SpawnOptions o = Options({"true"});
  o.keeper_program = dir_.Sub("no-such-keeper");
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(pid.status().message()),
              HasSubstr("exec the keeper " + dir_.Sub("no-such-keeper")));
  EXPECT_TRUE(PollUntil([] { return ZombieChildren().empty(); })) << "zombie children left";
  EXPECT_TRUE(exits_.calls().empty()) << "a failed spawn must not call on_exit";
}

// The parent pid and state in /proc/PID/stat.
std::pair<pid_t, char> ParentAndState(pid_t pid) {
  std::string stat = ReadFile(Proc(pid, "stat"));
  int ppid = 0;
  char state = 0;
  size_t close = stat.rfind(')');
  if (close == std::string::npos ||
      sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) {
    return {0, 0};
  }
  return {ppid, state};
}

// Keepers come from one zygote (no exec of their own: their command line is the zygote's)
// and are this process's own children, which the Reaper waits for, as exec'd keepers were.
TEST_F(KeeperTest, KeepersAreForkedByOneZygoteAndStayTheSpawnersChildren) {
  std::vector<std::pair<pid_t, pid_t>> spawned;  // (child, keeper)
  for (int i = 0; i < 2; ++i) {
    pid_t keeper = 0;
    auto pid =
        SharedReaper().SpawnAndWatch(Options({"sh", "-c", "exit 3"}), exits_.Callback(), &keeper);
    ASSERT_TRUE(pid.ok()) << pid.status();
    spawned.emplace_back(*pid, keeper);
  }
  pid_t zygote = KeeperZygotePid();
  ASSERT_GT(zygote, 0) << "no keeper zygote";
  EXPECT_EQ(ParentAndState(zygote).first, getpid());
  std::string zygote_cmdline = ReadFile(Proc(zygote, "cmdline"));
  EXPECT_NE(zygote_cmdline.find(std::string("--zygote") + '\0'), std::string::npos);
  EXPECT_EQ(ReadFile(Proc(zygote, "environ")), "");
  for (const auto& [child, keeper] : spawned) {
    ASSERT_GT(keeper, 0);
    std::string cmdline = ReadFile(Proc(keeper, "cmdline"));
    // Read while the keeper lives (it waits for its child, which exits 3 at once).
    if (!cmdline.empty()) {
      EXPECT_EQ(cmdline, zygote_cmdline) << "keeper " << keeper;
    }
    EXPECT_EQ(exits_.Wait(child).exit_code, 3);
    std::optional<ExitStatus> recorded = ReadExitFile(dir_.path(), child);
    ASSERT_TRUE(recorded.has_value()) << "no exit record from keeper " << keeper;
    EXPECT_EQ(recorded->exit_code, 3);
  }
  EXPECT_EQ(KeeperZygotePid(), zygote) << "one zygote serves every keeper";
  EXPECT_TRUE(PollUntil([] { return ZombieChildren().empty(); })) << "zombie children left";
}

// A keeper held while its child sleeps: its parent is this process, not the zygote.
TEST_F(KeeperTest, AZygotesKeeperIsReapedByTheSpawnerNotTheZygote) {
  pid_t keeper = 0;
  auto pid = SharedReaper().SpawnAndWatch(Options({"sleep", "30"}), exits_.Callback(), &keeper);
  ASSERT_TRUE(pid.ok()) << pid.status();
  ASSERT_GT(KeeperZygotePid(), 0);
  EXPECT_EQ(ReadFile(Proc(keeper, "cmdline")), ReadFile(Proc(KeeperZygotePid(), "cmdline")))
      << "not forked by the zygote";
  EXPECT_EQ(ParentAndState(keeper).first, getpid());
  EXPECT_EQ(ParentAndState(*pid).first, keeper);
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  EXPECT_EQ(exits_.Wait(*pid).term_signal, SIGKILL);
}

// The zygote killed: the next spawn still starts its child, the dead zygote is reaped (no
// zombie) and a new one serves the spawns after it.
TEST_F(KeeperTest, AZygoteThatDiedIsReapedAndReplaced) {
  auto first = SharedReaper().SpawnAndWatch(Options({"true"}), exits_.Callback());
  ASSERT_TRUE(first.ok()) << first.status();
  pid_t old = KeeperZygotePid();
  ASSERT_GT(old, 0);
  ASSERT_EQ(kill(old, SIGKILL), 0);
  ASSERT_TRUE(PollUntil([&] { return ParentAndState(old).second == 'Z'; }));
  for (int i = 0; i < 2; ++i) {
    auto pid = SharedReaper().SpawnAndWatch(Options({"sh", "-c", "exit 5"}), exits_.Callback());
    ASSERT_TRUE(pid.ok()) << pid.status();
    EXPECT_EQ(exits_.Wait(*pid).exit_code, 5);
  }
  EXPECT_GT(KeeperZygotePid(), 0);
  EXPECT_NE(KeeperZygotePid(), old);
  EXPECT_TRUE(PollUntil([] { return ZombieChildren().empty(); })) << "zombie children left";
}

// The zygote forks each keeper with the CPUs of the thread that asked, as an exec'd keeper
// inherited them: the node's own work stays off the cores inference holds.
TEST_F(KeeperTest, TheZygoteTakesTheAffinityOfTheSpawningThread) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 2) GTEST_SKIP() << "needs two CPUs";
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(static_cast<int>(n - 1), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  pid_t keeper = 0;
  auto pid = SharedReaper().SpawnAndWatch(Options({"sleep", "30"}), exits_.Callback(), &keeper);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::string want = "Cpus_allowed_list:\t" + std::to_string(n - 1) + "\n";
  auto allowed = [](pid_t p) {
    std::istringstream in(ReadFile(Proc(p, "status")));
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) return line + "\n";
    }
    return std::string();
  };
  EXPECT_EQ(allowed(KeeperZygotePid()), want);
  EXPECT_EQ(allowed(keeper), want);
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  EXPECT_EQ(exits_.Wait(*pid).term_signal, SIGKILL);
}

// The page cache charged to a v1 memory cgroup itself (not its children), from memory.stat.
uint64_t LocalCache(const std::string& dir) {
  std::istringstream in(ReadFile(dir + "/memory.stat"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cache ", 0) == 0) return std::stoull(line.substr(6));
  }
  return UINT64_MAX;
}

// The keeper moves to the exit cgroup before writing its record: the record's page cache is
// then not charged to the attempt's memory cgroup. Charged there, it kept that cgroup alive
// (dying) after its removal for as long as the record was cached, one per attempt, and
// thousands of dying memory cgroups slowed every cgroup operation of the node.
TEST_F(KeeperTest, TheExitRecordIsChargedToTheExitCgroupNotTheAttempts) {
  const std::string root = "/sys/fs/cgroup/memory";
  if (geteuid() != 0) GTEST_SKIP() << "needs root (cgroups)";
  if (access((root + "/cgroup.procs").c_str(), W_OK) != 0) {
    GTEST_SKIP() << "no writable cgroup v1 memory hierarchy at " << root;
  }
  const std::string parent = root + "/baton-test-exit-" + std::to_string(getpid());
  const std::string job = parent + "/job";
  ASSERT_EQ(mkdir(parent.c_str(), 0755), 0) << parent;
  ASSERT_EQ(mkdir(job.c_str(), 0755), 0) << job;
  struct Cleanup {
    std::string parent, job;
    ~Cleanup() {
      rmdir(job.c_str());
      rmdir(parent.c_str());
    }
  } cleanup{parent, job};
  ASSERT_EQ(std::system("true"), 0);  // its pages cached here first, not in the job's cgroup
  SpawnOptions o = Options({"true"});
  o.cgroup_procs = {job + "/cgroup.procs"};
  o.exit_cgroup_procs = parent + "/cgroup.procs";
  auto pid = SharedReaper().SpawnAndWatch(o, exits_.Callback());
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(exits_.Wait(*pid).exit_code, 0);
  ASSERT_TRUE(ReadExitFile(dir_.path(), *pid).has_value()) << "no exit record";
  // The kernel flushes memory.stat's per-CPU counts lazily (every 2 s at the latest).
  EXPECT_TRUE(PollUntil([&] { return LocalCache(parent) >= 4096; }, std::chrono::seconds(5)))
      << "the exit cgroup does not hold the record's page";
  EXPECT_EQ(LocalCache(job), 0u) << "the attempt's memory cgroup holds the record's page";
  EXPECT_EQ(ReadFile(job + "/cgroup.procs"), "") << "the keeper is still in the job's cgroup";
}

INSTANTIATE_TEST_SUITE_P(ForkedOrKept, ProcessTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return std::string(p.param ? "Kept" : "Forked");
                         });

}  // namespace
}  // namespace baton
