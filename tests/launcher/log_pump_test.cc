// Rank prefixes on job output: whole lines, never interleaved mid-line, mpirun tags
// rewritten, and the end drained before an attempt's end is reported.
#include "launcher/agent/log_pump.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace baton {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Put(int fd, const std::string& s) {
  ASSERT_EQ(write(fd, s.data(), s.size()), (ssize_t)s.size());
}

TEST(LogPump, PrefixesWholeLinesAndFlushesTheLastPartialOne) {
  testing::TempDir dir;
  LogPump pump;
  std::string log = dir.Sub("out.log");
  auto fd = pump.Open("1/1", log, LogPump::Mode::kPrefix, "[rank 3] ");
  ASSERT_TRUE(fd.ok());
  Put(*fd, "hel");
  Put(*fd, "lo\nsecond line\nno newline at the end");
  close(*fd);
  ASSERT_TRUE(pump.Drain("1/1", std::chrono::seconds(5)));
  EXPECT_EQ(Read(log), "[rank 3] hello\n[rank 3] second line\n[rank 3] no newline at the end\n");
}

TEST(LogPump, RanksWritingAtOnceNeverShareALine) {
  testing::TempDir dir;
  LogPump pump;
  std::string log = dir.Sub("out.log");
  std::vector<std::thread> writers;
  for (int r = 0; r < 4; ++r) {
    auto fd = pump.Open("g", log, LogPump::Mode::kPrefix, "[rank " + std::to_string(r) + "] ");
    ASSERT_TRUE(fd.ok());
    writers.emplace_back([fd = *fd, r] {
      std::string line = std::string(1000, static_cast<char>('a' + r)) + "\n";
      for (int i = 0; i < 200; ++i) {
        // Each line in two writes, so a naive shared file would interleave them.
        (void)!write(fd, line.data(), 500);
        (void)!write(fd, line.data() + 500, line.size() - 500);
      }
      close(fd);
    });
  }
  for (auto& t : writers) t.join();
  ASSERT_TRUE(pump.Drain("g", std::chrono::seconds(10)));
  std::istringstream in(Read(log));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    int rank = LogPump::RankOf(line);
    ASSERT_GE(rank, 0) << line.substr(0, 40);
    EXPECT_EQ(line.substr(9), std::string(1000, static_cast<char>('a' + rank)));
    ++lines;
  }
  EXPECT_EQ(lines, 800);
}

TEST(LogPump, RewritesMpirunTags) {
  EXPECT_EQ(LogPump::RewriteMpiLine("[1,3]<stdout>:step 5 loss 0.1"), "[rank 3] step 5 loss 0.1");
  EXPECT_EQ(LogPump::RewriteMpiLine("[1,12]<stderr>:warning"), "[rank 12] warning");
  EXPECT_EQ(LogPump::RewriteMpiLine("mpirun noticed that..."), "[mpirun] mpirun noticed that...");
  EXPECT_EQ(LogPump::RewriteMpiLine("[1,x]<stdout>:odd"), "[mpirun] [1,x]<stdout>:odd");
}

TEST(LogPump, FindsTheRankOfALine) {
  EXPECT_EQ(LogPump::RankOf("[rank 7] text"), 7);
  EXPECT_EQ(LogPump::RankOf("[mpirun] text"), -1);
  EXPECT_EQ(LogPump::RankOf("[rank x] text"), -1);
  EXPECT_EQ(LogPump::RankOf("plain"), -1);
}

TEST(LogPump, DrainWaitsForEveryWriterOfTheGroup) {
  testing::TempDir dir;
  LogPump pump;
  auto a = pump.Open("job", dir.Sub("a.log"), LogPump::Mode::kPrefix, "");
  auto b = pump.Open("job", dir.Sub("a.log"), LogPump::Mode::kPrefix, "");
  close(*a);
  EXPECT_FALSE(pump.Drain("job", std::chrono::milliseconds(100))) << "b still open";
  close(*b);
  EXPECT_TRUE(pump.Drain("job", std::chrono::seconds(5)));
  EXPECT_TRUE(pump.Drain("unknown-group", std::chrono::milliseconds(1)));
}

// A job that writes without end fills its log up to the cap, says so once, and keeps
// running: the rest is read and dropped, so its pipe never blocks it.
TEST(LogPump, OutputPastTheCapIsDroppedAfterOneMarkerLine) {
  testing::TempDir dir;
  LogPump pump(/*max_log_bytes=*/64 << 10);
  std::string log = dir.Sub("out.log");
  auto a = pump.Open("2/1", log, LogPump::Mode::kPrefix, "[rank 0] ");
  auto b = pump.Open("2/1", log, LogPump::Mode::kPrefix, "[rank 1] ");
  ASSERT_TRUE(a.ok() && b.ok());
  std::string line(1000, 'x');
  line += "\n";
  for (int i = 0; i < 1024; ++i) Put(i % 2 ? *a : *b, line);  // 1 MiB through a 64 KiB pipe
  close(*a);
  close(*b);
  ASSERT_TRUE(pump.Drain("2/1", std::chrono::seconds(10))) << "every byte was read";
  std::string text = Read(log);
  EXPECT_LE(text.size(), (64u << 10) + 200);
  EXPECT_GE(text.size(), (64u << 10) - 2 * 1024) << "filled up to the cap";
  size_t marker = text.find("[baton] output truncated");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(text.find("[baton] output truncated", marker + 1), std::string::npos) << "once";
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace baton
