// The agent reads files a job could have replaced: each attack on the reader (a FIFO, a
// link to /dev/zero or to a secret, a gigabyte, another owner's file) is refused at once
// with the problem named; pids and groups from records are believed only for processes
// in the attempt.
#include "launcher/agent/job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "launcher/agent/retention.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::ScratchDir;

std::string Why(const absl::Status& s) { return std::string(s.message()); }

class JobFiles : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return dir_.path() + "/" + name; }
  // jobs/`rel` with an output log, both last changed `age` ago.
  void MakeAttemptDir(const std::string& rel, absl::Duration age) {
    std::string dir = Path("jobs/" + rel);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/output.log") << "x";
    timespec t = absl::ToTimespec(absl::Now() - age);
    timespec times[2] = {t, t};
    for (const std::string& p : {dir + "/output.log", dir}) {
      utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW);
    }
  }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
  }
  ScratchDir dir_;
};

TEST_F(JobFiles, ARegularFileOfItsOwnerIsRead) {
  Write("note", "{\"step\":1}\n");
  absl::StatusOr<std::string> text = ReadUntrustedFile(Path("note"), geteuid());
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "{\"step\":1}\n");
  EXPECT_EQ(ReadUntrustedFile(Path("missing"), geteuid()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(JobFiles, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> text = ReadUntrustedFile(Path("fifo"), geteuid());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "no block";
  EXPECT_FALSE(text.ok());
  EXPECT_NE(Why(text.status()).find("not a regular file (a FIFO)"), std::string::npos)
      << text.status();
}

TEST_F(JobFiles, SymlinksAreNotFollowed) {
  ASSERT_EQ(symlink("/dev/zero", Path("zero").c_str()), 0);
  Write("secret", "root's");
  ASSERT_EQ(symlink(Path("secret").c_str(), Path("to-secret").c_str()), 0);
  for (const char* link : {"zero", "to-secret"}) {
    absl::StatusOr<std::string> text = ReadUntrustedFile(Path(link), geteuid());
    EXPECT_FALSE(text.ok()) << link;
    EXPECT_NE(Why(text.status()).find("symbolic link"), std::string::npos) << text.status();
  }
}

TEST_F(JobFiles, AGigabyteIsRefusedUnreadAndTheCapIsExact) {
  int fd = open(Path("huge").c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 1ll << 30), 0);  // sparse: nothing to read, but 1 GiB long
  close(fd);
  absl::StatusOr<std::string> text = ReadUntrustedFile(Path("huge"), geteuid());
  EXPECT_FALSE(text.ok());
  EXPECT_NE(Why(text.status()).find("is 1Gi, above the 64Ki read"), std::string::npos)
      << text.status();
  Write("at-cap", std::string(kMaxJobFileBytes, 'x'));
  EXPECT_TRUE(ReadUntrustedFile(Path("at-cap"), geteuid()).ok());
  Write("over-cap", std::string(kMaxJobFileBytes + 1, 'x'));
  EXPECT_FALSE(ReadUntrustedFile(Path("over-cap"), geteuid()).ok());
}

TEST_F(JobFiles, AnotherOwnersFileIsRefused) {
  Write("theirs", "x");
  uid_t other = geteuid() == 0 ? 65534 : geteuid() + 1;
  absl::StatusOr<std::string> text = ReadUntrustedFile(Path("theirs"), other);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kPermissionDenied);
}

// getpgid as the tests arrange it: pids 100 and 101 lead group 100, 200 is in group 200.
pid_t FakeGroupOf(pid_t pid) {
  if (pid == 100 || pid == 101) return 100;
  if (pid == 200) return 200;
  return -1;
}

TEST(BelievableGroup, OnlyAGroupTheAttemptsProcessesAreInIsBelieved) {
  const std::vector<pid_t> attempt = {100, 101};
  const pid_t own = 50;
  struct Case {
    long recorded;
    pid_t want;
    const char* why;
  } cases[] = {
      {100, 100, "the attempt's group"},
      {1, 0, "kill(-1) would reach every process"},
      {0, 0, "kill(0) is the agent's own group"},
      {-1, 0, "negative"},
      {50, 0, "the agent's group"},
      {200, 0, "another job's group"},
      {101, 0, "a pid of the attempt that leads no group"},
      {5'000'000'000L, 0, "beyond pid_max"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(BelievableGroup(c.recorded, attempt, own, FakeGroupOf), c.want) << c.why;
  }
  EXPECT_EQ(BelievableGroup(200, {200}, own, FakeGroupOf), 200);
  EXPECT_EQ(BelievableGroup(100, {}, own, FakeGroupOf), 0) << "no processes, no group";
}

// Retention on a node: ended attempts' directories go once unchanged for the period;
// those the agent still tracks stay, whatever their age, and so does anything else.
TEST_F(JobFiles, ExpiredAttemptDirsAreTheOldOnesTheAgentNoLongerTracks) {
  auto make = [&](const std::string& rel, absl::Duration age) { MakeAttemptDir(rel, age); };
  make("7/1", absl::Hours(24 * 31));  // ended long ago: goes
  make("7/2", absl::Hours(24 * 29));  // within the period: stays
  make("8/1", absl::Hours(24 * 90));  // old, but the agent still tracks it: stays
  make("x/1", absl::Hours(24 * 90));  // not a job's: left alone
  make("9/notes", absl::Hours(24 * 90));
  std::vector<std::string> expired =
      ExpiredAttemptDirs(dir_.path(), {{8, 1}}, absl::Now(), absl::Hours(24 * 30));
  EXPECT_EQ(expired, std::vector<std::string>{Path("jobs/7/1")});
  EXPECT_TRUE(ExpiredAttemptDirs(Path("missing"), {}, absl::Now(), absl::Hours(1)).empty());
}

// The janitor removes what ExpiredAttemptDirs names, asking the agent afresh at each sweep
// which attempts it tracks, and a job's directory with its last attempt.
TEST_F(JobFiles, TheJanitorRemovesEndedAttemptsPastRetentionAndTheirEmptiedJobDir) {
  MakeAttemptDir("7/1", absl::Hours(24 * 31));
  MakeAttemptDir("8/1", absl::Hours(24 * 31));
  MakeAttemptDir("8/2", absl::Hours(24 * 31));
  MakeAttemptDir("9/1", absl::Hours(1));
  std::set<std::pair<uint64_t, uint32_t>> tracked = {{8, 2}};
  AttemptDirJanitor janitor(dir_.path(), absl::Hours(24 * 30), [&] { return tracked; });
  std::vector<std::string> removed = janitor.Sweep();
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{Path("jobs/7/1"), Path("jobs/8/1")}));
  EXPECT_FALSE(std::filesystem::exists(Path("jobs/7"))) << "its last attempt went";
  EXPECT_TRUE(std::filesystem::exists(Path("jobs/8/2"))) << "tracked, whatever its age";
  EXPECT_TRUE(std::filesystem::exists(Path("jobs/9/1"))) << "within retention";
  tracked.clear();  // the attempt ended since
  EXPECT_EQ(janitor.Sweep(), std::vector<std::string>{Path("jobs/8/2")});
  EXPECT_FALSE(std::filesystem::exists(Path("jobs/8")));

  AttemptDirJanitor off(dir_.path(), absl::ZeroDuration(), [&] { return tracked; });
  off.Start();  // retention 0: keeps everything, starts no thread
  off.Stop();
  EXPECT_TRUE(std::filesystem::exists(Path("jobs/9/1")));
}

}  // namespace
}  // namespace baton
