#include <stdlib.h>

#include <optional>

#include "gtest/gtest.h"
#include "launcher/cli/client.h"
#include "launcher/cli/options.h"

namespace baton::cli {
namespace {

// Sets (or with nullptr unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

cxxopts::Options JobCommand() {
  cxxopts::Options opts("baton cancel", "test");
  AddCommonFlags(opts);
  opts.add_options()("job", "job ids", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"job"});
  return opts;
}

TEST(Parse, UnknownFlagIsAUsageError) {
  cxxopts::Options opts = JobCommand();
  int code = -1;
  EXPECT_FALSE(Parse(opts, {"--no-such-flag"}, &code));
  EXPECT_EQ(code, kUsage);
}

TEST(Parse, HelpStopsWithSuccess) {
  cxxopts::Options opts = JobCommand();
  int code = -1;
  EXPECT_FALSE(Parse(opts, {"--help"}, &code));
  EXPECT_EQ(code, kOk);
}

TEST(Connection, FlagsOverrideTheEnvironment) {
  ScopedEnv coord("BATON_COORDINATOR", "env-host:1");
  cxxopts::Options opts = JobCommand();
  int code = kOk;
  auto r = Parse(opts, {"--coordinator", "flag-host:2", "--timeout", "2m"}, &code);
  ASSERT_TRUE(r);
  auto c = Connection(*r, &code);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->coordinator, "flag-host:2");
  EXPECT_EQ(c->timeout, std::chrono::seconds(120));

  auto defaults = Parse(opts, {}, &code);
  ASSERT_TRUE(defaults);
  auto d = Connection(*defaults, &code);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->coordinator, "env-host:1");
  EXPECT_EQ(d->timeout, std::chrono::seconds(10));
}

TEST(Connection, ZeroOrJunkTimeoutIsAUsageError) {
  for (const char* bad : {"0", "0s", "soon"}) {
    cxxopts::Options opts = JobCommand();
    int code = kOk;
    auto r = Parse(opts, {"--timeout", bad}, &code);
    ASSERT_TRUE(r) << bad;
    EXPECT_FALSE(Connection(*r, &code)) << bad;
    EXPECT_EQ(code, kUsage) << bad;
  }
}

TEST(ConnectOptionsFromEnv, ReadsTheConnectionAndCredentialFromTheEnvironment) {
  ScopedEnv coord("BATON_COORDINATOR", "c:9");
  ScopedEnv ca("BATON_CA", "/etc/ca.pem");
  ScopedEnv sock("BATON_MUNGE_SOCKET", "/run/m.sock");
  ScopedEnv token("BATON_TOKEN", "btk_0123456789abcdef_secret");
  ScopedEnv insecure("BATON_INSECURE", "1");
  ConnectOptions o = ConnectOptionsFromEnv();
  EXPECT_EQ(o.coordinator, "c:9");
  EXPECT_EQ(o.ca_file, "/etc/ca.pem");
  EXPECT_EQ(o.munge_socket, "/run/m.sock");
  EXPECT_EQ(o.token, "btk_0123456789abcdef_secret");
  EXPECT_TRUE(o.insecure);
  auto cred = Credential(o);
  ASSERT_TRUE(cred.ok()) << cred.status();
  EXPECT_EQ(cred->first, "authorization");
  EXPECT_EQ(cred->second, "Bearer btk_0123456789abcdef_secret");
}

TEST(ConnectOptionsFromEnv, DefaultsToTheSystemPathsAndNeverToAClaimedIdentity) {
  ScopedEnv coord("BATON_COORDINATOR", nullptr);
  ScopedEnv ca("BATON_CA", nullptr);
  ScopedEnv sock("BATON_MUNGE_SOCKET", nullptr);
  ScopedEnv token("BATON_TOKEN", nullptr);
  ScopedEnv insecure("BATON_INSECURE", nullptr);
  ScopedEnv user("BATON_USER", "mallory");  // the old claims: nothing reads them any more
  ScopedEnv role("BATON_ROLE", "admin");
  ConnectOptions o = ConnectOptionsFromEnv();
  EXPECT_EQ(o.coordinator, "127.0.0.1:7070");
  EXPECT_EQ(o.ca_file, "/etc/baton/tls/ca.crt");
  EXPECT_EQ(o.munge_socket, "/run/munge/munge.socket.2");
  EXPECT_EQ(o.token, "");
  EXPECT_FALSE(o.insecure);
  o.munge_socket = "/nonexistent/munge.socket";
  auto cred = Credential(o);
  EXPECT_EQ(cred.status().code(), absl::StatusCode::kUnavailable) << "no munged: no credential";
  EXPECT_NE(std::string(cred.status().message()).find("/nonexistent/munge.socket"),
            std::string::npos);
}

TEST(JobIds, ParsesEveryPositionalId) {
  cxxopts::Options opts = JobCommand();
  int code = kOk;
  auto r = Parse(opts, {"17", "4", "23_5"}, &code);
  ASSERT_TRUE(r);
  auto ids = JobIds(*r, "cancel", &code);
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_EQ((*ids)[0].id, 17u);
  EXPECT_FALSE((*ids)[0].task);
  EXPECT_EQ((*ids)[1].id, 4u);
  EXPECT_EQ((*ids)[2].id, 23u) << "task 5 of array 23";
  EXPECT_EQ((*ids)[2].task, 5u);
  EXPECT_EQ((*ids)[2].text, "23_5");
}

TEST(JobIds, MissingOrBadIdIsAUsageError) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"0"},
                                               {"12x"},
                                               {"5", "x"},
                                               {"17_"},
                                               {"17_x"},
                                               {"_5"},
                                               {"17_5_1"},
                                               {"17_-1"}}) {
    cxxopts::Options opts = JobCommand();
    int code = kOk;
    auto r = Parse(opts, args, &code);
    ASSERT_TRUE(r);
    EXPECT_FALSE(JobIds(*r, "cancel", &code));
    EXPECT_EQ(code, kUsage);
  }
}

TEST(ExitCodeFor, MapsStatusCodesToDocumentedExitCodes) {
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kOk), kOk);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kInvalidArgument), kUsage);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kNotFound), kNotFound);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kPermissionDenied), kDenied);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kUnauthenticated), kDenied);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kUnavailable), kUnavailable);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kDeadlineExceeded), kUnavailable);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kFailedPrecondition), kWrongState);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kInternal), kError);
}

TEST(Client, UnaryContextsCarryTheDeadlineStreamingOnesDoNot) {
  ConnectOptions o;
  o.coordinator = "127.0.0.1:1";
  o.insecure = true;  // loopback; no call is made
  o.token = "btk_0123456789abcdef_secret";
  o.timeout = std::chrono::seconds(5);
  Client client(o);
  auto before = std::chrono::system_clock::now();
  auto unary = client.Context();
  EXPECT_GE(unary->deadline(), before + std::chrono::seconds(5));
  EXPECT_LE(unary->deadline(), std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto streaming = client.Context(/*streaming=*/true);
  EXPECT_GT(streaming->deadline(), std::chrono::system_clock::now() + std::chrono::hours(24));
}

}  // namespace
}  // namespace baton::cli
