// MUNGE credentials against a real, private munged (scripts/munged.sh): the uid is the
// encoding process's, proven by the kernel, whatever it claims; a credential is good for
// one decode, within its TTL; no munged is a clear Unavailable.
#include "common/munge.h"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

class Munge : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("baton-munge");
    chmod(dir_->path().c_str(), 0711);  // test users reach the socket
    testing::CommandResult r = testing::RunProcess(
        {std::string(BATON_SOURCE_DIR) + "/scripts/munged.sh", "start", dir_->Sub("munge")}, {});
    why_ = r.exit_code == 0 ? "" : "no private munged: " + r.err;
  }
  static void TearDownTestSuite() {
    testing::RunProcess(
        {std::string(BATON_SOURCE_DIR) + "/scripts/munged.sh", "stop", dir_->Sub("munge")}, {});
    delete dir_;
  }
  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
  }
  static std::string Socket() { return dir_->Sub("munge/munge.socket"); }

  static inline testing::TempDir* dir_ = nullptr;
  static inline std::string why_;
};

TEST_F(Munge, ACredentialCarriesTheEncodersUidAndPayloadAndDecodesOnce) {
  auto cred = MungeEncode(Socket(), kMungeAudience);
  ASSERT_TRUE(cred.ok()) << cred.status();
  auto decoded = MungeDecode(Socket(), *cred);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->uid, geteuid());
  EXPECT_EQ(decoded->gid, getegid());
  EXPECT_EQ(decoded->payload, kMungeAudience);
  EXPECT_GT(decoded->encoded_unix_s, 0);
  auto replayed = MungeDecode(Socket(), *cred);
  EXPECT_EQ(replayed.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(replayed.status().message(), HasSubstr("replayed"));
}

TEST_F(Munge, TheUidIsTheKernelsNotWhatTheProcessSays) {
  if (std::string missing = testing::MissingTestUsers(); !missing.empty()) GTEST_SKIP() << missing;
  passwd* alice = getpwnam(testing::kAlice);
  ASSERT_NE(alice, nullptr);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  if (child == 0) {
    // As alice, with USER and LOGNAME saying root: only the uid counts.
    setenv("USER", "root", 1);
    setenv("LOGNAME", "root", 1);
    if (setgid(alice->pw_gid) != 0 || setuid(alice->pw_uid) != 0) _exit(2);
    auto cred = MungeEncode(Socket(), kMungeAudience);
    if (!cred.ok()) _exit(3);
    ssize_t n = write(pipefd[1], cred->data(), cred->size());
    _exit(n == static_cast<ssize_t>(cred->size()) ? 0 : 4);
  }
  close(pipefd[1]);
  std::string cred;
  char buf[512];
  for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;) cred.append(buf, n);
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  auto decoded = MungeDecode(Socket(), cred);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->uid, alice->pw_uid);
  EXPECT_NE(decoded->uid, 0u);
}

TEST_F(Munge, AnExpiredCredentialIsRefused) {
  auto cred = MungeEncode(Socket(), kMungeAudience, /*ttl_seconds=*/1);
  ASSERT_TRUE(cred.ok());
  // MUNGE counts whole seconds: past encode time + TTL, with one second of margin.
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  auto decoded = MungeDecode(Socket(), *cred);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(decoded.status().message(), HasSubstr("expired"));
}

TEST_F(Munge, GarbageAndATamperedCredentialAreRefused) {
  auto cred = MungeEncode(Socket(), kMungeAudience);
  ASSERT_TRUE(cred.ok());
  std::string tampered = *cred;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  for (const std::string& bad : {tampered, std::string("MUNGE:not-a-credential:"), std::string(),
                                 std::string(100000, 'x')}) {
    auto decoded = MungeDecode(Socket(), bad);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kUnauthenticated) << bad.substr(0, 40);
  }
}

TEST_F(Munge, NoMungedIsUnavailableNamingTheSocket) {
  auto cred = MungeEncode("/nonexistent/munge.socket", kMungeAudience);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(cred.status().message(), HasSubstr("/nonexistent/munge.socket"));
  auto decoded = MungeDecode("/nonexistent/munge.socket", "MUNGE:x:");
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace baton
