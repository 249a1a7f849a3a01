// baton-keeper's command line (keeper_args.h): what the agent encodes comes back whole,
// and anything malformed is refused naming the problem.
#include "launcher/agent/keeper_args.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton {
namespace {

using ::testing::HasSubstr;

KeeperArgs Full() {
  KeeperArgs k;
  k.argv = {"python3", "-c", "print('a b')", "", "--argc=9", "--"};
  k.env = {"PATH=/usr/bin", "EMPTY=", "WITH=equals=inside"};
  k.cwd = "/var/lib/baton/jobs/7/1";
  k.exit_prefix = "/var/lib/baton/jobs/7/1/exit.";
  k.msg_fd = 9;
  k.out_fd = 10;
  k.err_fd = 11;
  k.keep_fds = {12, 13};
  k.group = 4242;
  k.cgroup_procs = {"/sys/fs/cgroup/cpu/baton/7/cgroup.procs",
                    "/sys/fs/cgroup/memory/baton/7/cgroup.procs"};
  k.exit_cgroup_procs = "/sys/fs/cgroup/memory/baton/cgroup.procs";
  k.binding = ProcessBinding{{0, 2, 3}, {1}};
  k.user = ProcessUser{1001, 1002, {27, 44}};
  return k;
}

void ExpectSame(const KeeperArgs& a, const KeeperArgs& b) {
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.cwd, b.cwd);
  EXPECT_EQ(a.exit_prefix, b.exit_prefix);
  EXPECT_EQ(a.msg_fd, b.msg_fd);
  EXPECT_EQ(a.out_fd, b.out_fd);
  EXPECT_EQ(a.err_fd, b.err_fd);
  EXPECT_EQ(a.keep_fds, b.keep_fds);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.cgroup_procs, b.cgroup_procs);
  EXPECT_EQ(a.exit_cgroup_procs, b.exit_cgroup_procs);
  EXPECT_EQ(a.binding, b.binding);
  ASSERT_EQ(a.user.has_value(), b.user.has_value());
  if (a.user) {
    EXPECT_EQ(a.user->uid, b.user->uid);
    EXPECT_EQ(a.user->gid, b.user->gid);
    EXPECT_EQ(a.user->groups, b.user->groups);
  }
}

TEST(KeeperArgs, EverythingTheAgentEncodesComesBackWhole) {
  // Including a command whose own arguments look like the keeper's options.
  KeeperArgs decoded;
  std::string error;
  ASSERT_TRUE(DecodeKeeperArgs(EncodeKeeperArgs(Full()), &decoded, &error)) << error;
  ExpectSame(decoded, Full());
}

TEST(KeeperArgs, TheSmallestPlanComesBackWhole) {
  KeeperArgs k;
  k.argv = {"true"};
  k.cwd = "/";
  k.exit_prefix = "/tmp/exit.";
  k.msg_fd = 3;
  k.out_fd = 4;
  KeeperArgs decoded;
  std::string error;
  ASSERT_TRUE(DecodeKeeperArgs(EncodeKeeperArgs(k), &decoded, &error)) << error;
  ExpectSame(decoded, k);
  EXPECT_FALSE(decoded.user.has_value());
  EXPECT_EQ(decoded.err_fd, -1);
}

TEST(KeeperArgs, MalformedCommandLinesAreRefusedNamingTheProblem) {
  auto with = [](const std::string& from, const std::string& to) {
    std::vector<std::string> a = EncodeKeeperArgs(Full());
    for (auto& s : a) {
      if (s == from) s = to;
    }
    return a;
  };
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  std::vector<std::string> no_separator = EncodeKeeperArgs(Full());
  no_separator.resize(no_separator.size() - 10);  // cut before "--" and what follows
  std::vector<std::string> short_argv = EncodeKeeperArgs(Full());
  short_argv.resize(short_argv.size() - 5);  // the env and two of argv's arguments gone
  const std::vector<Case> cases = {
      {with("--msg-fd=9", "--msg-fd=nine"), "malformed option '--msg-fd=nine'"},
      {with("--out-fd=10", "--out-fd=-1"), "malformed option '--out-fd=-1'"},
      {with("--group=4242", "--colour=blue"), "unknown option '--colour'"},
      {with("--group=4242", "group"), "malformed option 'group'"},
      {with("--cpus=0,2,3", "--cpus=0,,3"), "malformed option '--cpus=0,,3'"},
      {with("--cpus=0,2,3", "--cpus=0,2,"), "malformed option '--cpus=0,2,'"},
      {with("--user=1001:1002:27,44", "--user=alice"), "malformed option '--user=alice'"},
      {with("--argc=6", "--argc=0"), "malformed option '--argc=0'"},
      {with("--cwd=/var/lib/baton/jobs/7/1", "--group=1"), "--cwd"},
      {with("--msg-fd=9", "--group=1"), "--msg-fd"},
      {with("PATH=/usr/bin", "PATH"), "environment entry 'PATH' is not NAME=value"},
      {with("python3", ""), "an empty command"},
      {no_separator, "no '--' before the command"},
      {short_argv, "fewer arguments than --argc says"},
  };
  for (const auto& c : cases) {
    KeeperArgs decoded;
    std::string error;
    EXPECT_FALSE(DecodeKeeperArgs(c.args, &decoded, &error)) << c.error;
    EXPECT_THAT(error, HasSubstr(c.error));
  }
}

TEST(KeeperArgs, ARefusedCommandLineStillNamesTheStatusPipe) {
  // So that the keeper can tell the agent what was wrong instead of leaving it guessing.
  KeeperArgs decoded;
  std::string error;
  EXPECT_FALSE(DecodeKeeperArgs({"--msg-fd=9", "--bogus=1"}, &decoded, &error));
  EXPECT_EQ(decoded.msg_fd, 9);
}

}  // namespace
}  // namespace baton
