// The agent's record of an attempt: written whole and private, read back as written, an
// older agent's two files read into one, and a damaged or planted file refused by name.
#include "launcher/agent/attempt_record.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::ScratchDir;
using ::testing::HasSubstr;

v1::AgentAttemptRecord Sample() {
  v1::AgentAttemptRecord r;
  r.mutable_launch()->set_job_id(7);
  r.mutable_launch()->set_attempt(2);
  r.mutable_launch()->set_exec_secret("s3cret");
  r.mutable_launch()->mutable_spec()->add_command("train");
  r.set_process_group(4100);
  auto* rank = r.add_processes();
  rank->set_pid(4100);
  rank->set_local_rank(1);
  rank->set_keeper(4099);
  auto* daemon = r.add_processes();
  daemon->set_pid(4200);
  daemon->set_daemon(true);
  return r;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(AttemptRecord, IsReadBackAsWrittenPrivateAndWhole) {
  ScratchDir dir;
  ASSERT_TRUE(WriteAttemptRecord(dir.path(), Sample()).ok());
  absl::StatusOr<v1::AgentAttemptRecord> back = ReadAttemptRecord(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), Sample().SerializeAsString());
  struct stat st;
  ASSERT_EQ(stat((dir.path() + "/attempt.pb").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "it holds the exec secret";
  // Rewritten with fewer processes: the new record replaces the old one entirely.
  v1::AgentAttemptRecord fewer = Sample();
  fewer.mutable_processes()->RemoveLast();
  ASSERT_TRUE(WriteAttemptRecord(dir.path(), fewer).ok());
  back = ReadAttemptRecord(dir.path());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->processes_size(), 1);
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename(), "attempt.pb") << "no temp file is left behind";
  }
}

TEST(AttemptRecord, AnOlderAgentsLaunchAndRanksFilesAreReadIntoOne) {
  ScratchDir dir;
  Write(dir.path() + "/launch.pb", Sample().launch().SerializeAsString());
  Write(dir.path() + "/ranks",
        "4100\nrank 4100 1 4099\ndaemon 4200 0\nrank x y\nsomething else\nrank 4300 0 0\n");
  absl::StatusOr<v1::AgentAttemptRecord> r = ReadAttemptRecord(dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->launch().exec_secret(), "s3cret");
  EXPECT_EQ(r->process_group(), 4100);
  ASSERT_EQ(r->processes_size(), 3) << "malformed lines are skipped";
  EXPECT_EQ(r->processes(0).pid(), 4100);
  EXPECT_EQ(r->processes(0).local_rank(), 1u);
  EXPECT_EQ(r->processes(0).keeper(), 4099);
  EXPECT_FALSE(r->processes(0).daemon());
  EXPECT_EQ(r->processes(1).pid(), 4200);
  EXPECT_TRUE(r->processes(1).daemon());
  EXPECT_EQ(r->processes(2).pid(), 4300);

  // Without the ranks file: the launch alone (the agent then watches every process).
  std::filesystem::remove(dir.path() + "/ranks");
  r = ReadAttemptRecord(dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->processes_size(), 0);

  // Once a new record is written, it is the one read.
  v1::AgentAttemptRecord newer = Sample();
  newer.set_process_group(5000);
  ASSERT_TRUE(WriteAttemptRecord(dir.path(), newer).ok());
  r = ReadAttemptRecord(dir.path());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->process_group(), 5000);
}

TEST(AttemptRecord, ADamagedMissingOrPlantedRecordIsRefusedNamingIt) {
  ScratchDir dir;
  std::string path = dir.path() + "/attempt.pb";
  EXPECT_EQ(ReadAttemptRecord(dir.path()).status().code(), absl::StatusCode::kNotFound);

  Write(path, "\xff\xff\xff not a record");
  absl::Status s = ReadAttemptRecord(dir.path()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("unreadable attempt record " + path));

  v1::AgentAttemptRecord no_launch = Sample();
  no_launch.clear_launch();
  Write(path, no_launch.SerializeAsString());
  s = ReadAttemptRecord(dir.path()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("has no launch"));

  // A link put where the record was (to a file with a valid record, even) is not followed.
  std::filesystem::remove(path);
  std::string elsewhere = dir.path() + "/elsewhere";
  std::filesystem::create_directory(elsewhere);
  ASSERT_TRUE(WriteAttemptRecord(elsewhere, Sample()).ok());
  ASSERT_EQ(symlink((elsewhere + "/attempt.pb").c_str(), path.c_str()), 0);
  s = ReadAttemptRecord(dir.path()).status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr(path));

  Write(dir.path() + "/launch.pb", "\xff\xff garbage");
  std::filesystem::remove(path);
  s = ReadAttemptRecord(dir.path()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("unreadable launch record " + dir.path() + "/launch.pb"));
}

}  // namespace
}  // namespace baton
