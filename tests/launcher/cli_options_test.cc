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

TEST(ConnectOptionsFromEnv, ReadsTheCallerFromTheEnvironment) {
  ScopedEnv coord("BATON_COORDINATOR", "c:9");
  ScopedEnv user("BATON_USER", "alice");
  ScopedEnv tenant("BATON_TENANT", "vision");
  ScopedEnv role("BATON_ROLE", "admin");
  ConnectOptions o = ConnectOptionsFromEnv();
  EXPECT_EQ(o.coordinator, "c:9");
  EXPECT_EQ(o.caller.user, "alice");
  EXPECT_EQ(o.caller.tenant, "vision");
  EXPECT_EQ(o.caller.role, Role::kAdmin);
}

TEST(ConnectOptionsFromEnv, DefaultsTenantToTheUserAndRoleToResearcher) {
  ScopedEnv coord("BATON_COORDINATOR", nullptr);
  ScopedEnv user("BATON_USER", "bob");
  ScopedEnv tenant("BATON_TENANT", nullptr);
  ScopedEnv role("BATON_ROLE", "wizard");
  ConnectOptions o = ConnectOptionsFromEnv();
  EXPECT_EQ(o.coordinator, "127.0.0.1:7070");
  EXPECT_EQ(o.caller.tenant, "bob");
  EXPECT_EQ(o.caller.role, Role::kResearcher);
}

TEST(JobIds, ParsesEveryPositionalId) {
  cxxopts::Options opts = JobCommand();
  int code = kOk;
  auto r = Parse(opts, {"17", "4"}, &code);
  ASSERT_TRUE(r);
  auto ids = JobIds(*r, "cancel", &code);
  ASSERT_TRUE(ids);
  EXPECT_EQ(*ids, (std::vector<uint64_t>{17, 4}));
}

TEST(JobIds, MissingOrBadIdIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"0"}, {"12x"}, {"5", "x"}}) {
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
  o.caller = Caller{"alice", "vision", Role::kResearcher};
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
