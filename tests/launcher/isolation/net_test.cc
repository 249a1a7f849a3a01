// tc and nft output parsing, and the idempotent wrappers over a scripted runner.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/isolation/net_caps.h"
#include "tests/launcher/isolation/fakes.h"

namespace baton {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kClasses[] = R"(class htb 1:1 root rate 1Gbit ceil 1Gbit burst 1375b cburst 1375b 
 Sent 6582057 bytes 4394 pkt (dropped 0, overlimits 102 requeues 0) 
 backlog 0b 0p requeues 0
 lended: 102 borrowed: 0 giants: 0

class htb 1:a0 parent 1:1 prio 0 rate 70Mbit ceil 700Mbit burst 1583b cburst 1487b 
 Sent 6581589 bytes 4388 pkt (dropped 7, overlimits 101 requeues 0) 
 backlog 0b 0p requeues 0

class htb 1:20 parent 1:1 prio 0 rate 300Mbit ceil 1Gbit burst 1537b cburst 1375b 
 Sent 468 bytes 6 pkt (dropped 0, overlimits 0 requeues 0) 
)";

TEST(TcParse, ClassesWithRatesAndCounters) {
  auto classes = ParseHtbClasses(kClasses);
  ASSERT_EQ(classes.size(), 3u);
  EXPECT_EQ(classes[0xa0].bytes, 6581589u);
  EXPECT_EQ(classes[0xa0].packets, 4388u);
  EXPECT_EQ(classes[0xa0].overlimits, 101u);
  EXPECT_EQ(classes[0xa0].dropped, 7u);
  EXPECT_EQ(classes[0xa0].rate_bits, 70'000'000u);
  EXPECT_EQ(classes[0xa0].ceil_bits, 700'000'000u);
  EXPECT_EQ(classes[0x20].bytes, 468u);
  EXPECT_EQ(classes[1].ceil_bits, 1'000'000'000u);
  EXPECT_EQ(HtbClassId(0xa0), "1:a0");
  EXPECT_EQ(ParseTcRate("64Kbit"), 64'000u);
}

TEST(NftParse, RulesByTheirCommentTag) {
  auto rules = ParseNftRules(
      "table inet baton_n1 {\n\tchain out { # handle 1\n"
      "\t\ttype filter hook output priority filter; policy accept;\n"
      "\t\tsocket cgroupv2 level 3 \"unified/baton/n1/job-3-a1\" meta priority set 1:100 "
      "comment \"job-3-a1 1:100\" # handle 7\n"
      "\t\tmeta l4proto tcp accept # handle 8\n\t}\n}\n");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules["job-3-a1"].handle, 7);
  EXPECT_EQ(rules["job-3-a1"].class_id, "1:100");
}

TEST(Htb, EnsureClassSaysWhenItIsAlreadyThereAndUpdatesIt) {
  testing::ScriptedRunner runner;
  runner.Answer("tc -s class show", {0, kClasses, ""});
  Htb htb(&runner, "eth1");
  auto made = htb.EnsureClass(0x101, 10, 100);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(*made, Ensured::kCreated);
  auto again = htb.EnsureClass(0xa0, 20, 200);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, Ensured::kAlreadyThere);
  EXPECT_THAT(runner.calls(), Contains("tc class add dev eth1 parent 1:1 classid 1:101 htb rate "
                                       "10mbit ceil 100mbit"));
  EXPECT_THAT(runner.calls(), Contains("tc class change dev eth1 parent 1:1 classid 1:a0 htb "
                                       "rate 20mbit ceil 200mbit"));
  EXPECT_TRUE(htb.DeleteClass(0x999).ok()) << "absent: nothing to do";
}

TEST(Htb, EnsureRootKeepsAnHtbRootAndReplacesAnyOther) {
  testing::ScriptedRunner replaced;
  replaced.Answer("tc qdisc show", {0, "qdisc noqueue 0: root refcnt 2\n", ""});
  ASSERT_EQ(*Htb(&replaced, "v0").EnsureRoot(1000, 0x20), Ensured::kCreated);
  EXPECT_THAT(replaced.calls(),
              Contains("tc qdisc replace dev v0 root handle 1: htb default 20 r2q 1000"));
  testing::ScriptedRunner kept;
  kept.Answer("tc qdisc show", {0, "qdisc htb 1: root refcnt 2 r2q 1000 default 0x20\n", ""});
  ASSERT_EQ(*Htb(&kept, "v0").EnsureRoot(1000, 0x20), Ensured::kAlreadyThere);
  for (const auto& c : kept.calls()) EXPECT_THAT(c, ::testing::Not(HasSubstr("qdisc replace")));
}

TEST(Htb, AMissingDeviceIsNotFound) {
  testing::ScriptedRunner runner;
  runner.Answer("tc qdisc show", {1, "", "Cannot find device \"nope\"\n"});
  auto r = Htb(&runner, "nope").EnsureRoot(1000, 0x20);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

TEST(NetCaps, NeedsANicAndItsRate) {
  auto caps =
      NetCaps::Create(NetCapsOptions{.nic = "eth1"}, std::make_shared<testing::ScriptedRunner>());
  EXPECT_EQ(caps.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NetCaps, RemoveDeletesTheRuleThenTheClass) {
  auto runner = std::make_shared<testing::ScriptedRunner>();
  runner->Answer("tc qdisc show", {0, "qdisc htb 1: root\n", ""});
  auto caps = NetCaps::Create(NetCapsOptions{.nic = "v0", .nic_mbps = 1000}, runner);
  ASSERT_TRUE(caps.ok());
  auto cls = (*caps)->Add("job-1-a1", "unified/b/job-1-a1", 2, /*ceil_mbps=*/300);
  ASSERT_TRUE(cls.ok());
  EXPECT_EQ(cls->ceil_mbps, 300u);
  runner->Answer("nft -a list chain",
                 {0, "socket cgroupv2 level 2 \"x\" comment \"job-1-a1 1:100\" # handle 9\n", ""});
  runner->Answer("tc -s class show",
                 {0, "class htb 1:100 parent 1:1 rate 30Mbit ceil 300Mbit\n", ""});
  ASSERT_TRUE((*caps)->Remove("job-1-a1").ok());
  auto calls = runner->calls();
  auto rule = std::find(calls.begin(), calls.end(), "nft delete rule inet baton out handle 9");
  auto cls_del = std::find(calls.begin(), calls.end(), "tc class del dev v0 classid 1:100");
  ASSERT_NE(rule, calls.end());
  ASSERT_NE(cls_del, calls.end());
  EXPECT_LT(rule, cls_del);
}

}  // namespace
}  // namespace baton
