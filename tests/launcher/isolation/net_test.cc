// tc and nft output parsing (recorded real output in testdata/), and the idempotent
// wrappers over a scripted runner.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/isolation/net_caps.h"
#include "tests/launcher/isolation/fakes.h"
#include "tests/launcher/test_util.h"

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

// Recorded on Debian 12 (iproute2 6.1, nftables 1.0.6) in a network namespace; the nft
// table and cgroup paths renamed to the agent's.
std::string Recorded(const std::string& name) {
  return launcher_testing::ReadFile(std::string(BATON_SOURCE_DIR) +
                                    "/tests/launcher/isolation/testdata/" + name);
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// Each input fails `parse` with InvalidArgument whose message holds the reason given.
template <typename Parse>
void ExpectInvalid(Parse parse, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [input, why] : cases) {
    auto parsed = parse(input);
    ASSERT_FALSE(parsed.ok()) << input;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << input;
    EXPECT_THAT(Message(parsed.status()), HasSubstr(why)) << input;
  }
}

TEST(TcParse, ClassesWithRatesAndCounters) {
  auto classes = ParseHtbClasses(kClasses);
  ASSERT_TRUE(classes.ok()) << classes.status();
  ASSERT_EQ(classes->size(), 3u);
  auto& c = *classes;
  EXPECT_EQ(c[0xa0].bytes, 6581589u);
  EXPECT_EQ(c[0xa0].packets, 4388u);
  EXPECT_EQ(c[0xa0].overlimits, 101u);
  EXPECT_EQ(c[0xa0].dropped, 7u);
  EXPECT_EQ(c[0xa0].rate_bits, 70'000'000u);
  EXPECT_EQ(c[0xa0].ceil_bits, 700'000'000u);
  EXPECT_EQ(c[0x20].bytes, 468u);
  EXPECT_EQ(c[1].ceil_bits, 1'000'000'000u);
  EXPECT_EQ(HtbClassId(0xa0), "1:a0");
}

TEST(TcParse, RecordedClassListing) {
  auto classes = ParseHtbClasses(Recorded("tc_classes.txt"));
  ASSERT_TRUE(classes.ok()) << classes.status();
  ASSERT_EQ(classes->size(), 3u);
  EXPECT_EQ(classes->at(0x20).rate_bits, 300'000'000u);
  EXPECT_EQ(classes->at(0xa0).ceil_bits, 700'000'000u);
  EXPECT_EQ(classes->at(1).bytes, 566u);
  EXPECT_EQ(classes->at(1).packets, 7u);
  auto none = ParseHtbClasses("");  // tc prints nothing for a device without classes
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(TcParse, OtherQdiscsClassesAreSkipped) {
  auto classes = ParseHtbClasses(
      "class mq :1 root \n Sent 10 bytes 1 pkt (dropped 0, overlimits 0 requeues 0) \n"
      "class htb 1:5 root rate 8bit ceil 8bit burst 1b cburst 1b \n"
      " Sent 3 bytes 1 pkt (dropped 0, overlimits 0 requeues 0) \n");
  ASSERT_TRUE(classes.ok()) << classes.status();
  ASSERT_EQ(classes->size(), 1u);
  EXPECT_EQ(classes->at(5).bytes, 3u);
}

TEST(TcParse, MalformedClassListingsAreErrorsNamingTheProblem) {
  const std::string sent = " Sent 1 bytes 1 pkt (dropped 0, overlimits 0 requeues 0)\n";
  ExpectInvalid(
      ParseHtbClasses,
      {
          {"class htb 1:zz root rate 1Gbit ceil 1Gbit\n" + sent, "malformed class id"},
          {"class htb 1:1 root rate fast ceil 1Gbit\n" + sent, "malformed tc rate 'fast'"},
          {"class htb 1:1 root ceil 1Gbit\n" + sent, "no rate"},
          {"class htb 1:1 root rate 1Gbit\n" + sent, "no ceil"},
          {"class htb 1:1 root rate 1Gbit ceil 1Gbit\n", "1:1: no 'Sent' counters"},
          {"class htb 1:1 root rate 1Gbit ceil 1Gbit\nclass htb 1:2 parent 1:1 rate 1Gbit ceil "
           "1Gbit\n" +
               sent,
           "1:1: no 'Sent' counters"},
          {"class htb 1:1 root rate 1Gbit ceil 1Gbit\n Sent many bytes 1 pkt (dropped 0, "
           "overlimits 0 requeues 0)\n",
           "1:1: malformed counters"},
      });
}

TEST(TcParse, RatesInTcsUnits) {
  EXPECT_EQ(*ParseTcRate("64Kbit"), 64'000u);
  EXPECT_EQ(*ParseTcRate("800bit"), 800u);
  EXPECT_EQ(*ParseTcRate("1.5Gbit"), 1'500'000'000u);
  EXPECT_EQ(*ParseTcRate("2Tbit"), 2'000'000'000'000u);
  for (const std::string bad : {"", "Mbit", "12", "12Mbps", "1.2.3Mbit", "-5Mbit", "12 Mbit"}) {
    auto rate = ParseTcRate(bad);
    ASSERT_FALSE(rate.ok()) << bad;
    EXPECT_THAT(Message(rate.status()), HasSubstr("'" + bad + "'"));
  }
  uint32_t major = 0, minor = 0;
  ASSERT_TRUE(ParseClassId("1:a0", &major, &minor));
  EXPECT_EQ(minor, 0xa0u);
  EXPECT_FALSE(ParseClassId("1a0", &major, &minor));
  EXPECT_FALSE(ParseClassId("1:", &major, &minor));
}

TEST(NftParse, RecordedChainListingByCommentTag) {
  auto rules = ParseNftRules(Recorded("nft_chain.json"));
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 2u) << "the rule without a comment is not the agent's";
  EXPECT_EQ(rules->at("job-3-a1").handle, 3);
  EXPECT_EQ(rules->at("job-3-a1").class_id, "1:a0");
  EXPECT_EQ(rules->at("job-4-a2").handle, 4);
  EXPECT_EQ(rules->at("job-4-a2").class_id, "1:101");
}

TEST(NftParse, RulesWithOtherCommentsAreNotTheAgents) {
  auto rules = ParseNftRules(
      R"({"nftables": [{"rule": {"handle": 9, "comment": "hand-made"}},
                       {"rule": {"handle": 10, "comment": "job-1-a1 1:100"}}]})");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ(rules->at("job-1-a1").handle, 10);
}

TEST(NftParse, TheMarkARuleSetsIsReadFromItsComment) {
  auto rules = ParseNftRules(
      R"({"nftables": [{"rule": {"handle": 1, "comment": "job-1-a1 1:100 0x00800000"}},
                       {"rule": {"handle": 2, "comment": "job-2-a1 1:101"}},
                       {"rule": {"handle": 3, "comment": "job-3-a1 1:102 zz"}}]})");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ(rules->at("job-1-a1").mark, 0x800000u);
  EXPECT_EQ(rules->at("job-2-a1").mark, 0u) << "an agent's before the IFB: no mark";
  EXPECT_EQ(rules->at("job-3-a1").mark, 0u);
  EXPECT_EQ(rules->at("job-3-a1").class_id, "1:102");
}

// A restarted agent re-adopting a live attempt ensures its rule again: one that sets no
// mark (an agent before the IFB) or another mark (--net-cap-mark changed) is rewritten,
// or the attempt's packets would miss the redirect and leave uncapped.
TEST(NftCgroupRules, ARuleWithAnotherMarkIsRewritten) {
  testing::ScriptedRunner old;
  old.Answer("nft -j list chain", {0, testing::NftListing({{"job-1-a1 1:100", 9}}), ""});
  auto r = NftCgroupRules(&old, "baton").EnsureRule("job-1-a1", "unified/j", 1, "1:100", 0x800000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, Ensured::kCreated);
  EXPECT_THAT(old.calls(), Contains("nft delete rule inet baton out handle 9"));
  EXPECT_THAT(old.calls(),
              Contains(HasSubstr("meta mark set meta mark | 0x00800000 meta priority set 1:100 "
                                 "comment \"job-1-a1 1:100 0x00800000\"")));
  testing::ScriptedRunner same;
  same.Answer("nft -j list chain",
              {0, testing::NftListing({{"job-1-a1 1:100 0x00800000", 9}}), ""});
  auto kept =
      NftCgroupRules(&same, "baton").EnsureRule("job-1-a1", "unified/j", 1, "1:100", 0x800000);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, Ensured::kAlreadyThere);
  for (const auto& c : same.calls()) {
    EXPECT_THAT(c, ::testing::Not(::testing::AnyOf(HasSubstr("add rule"), HasSubstr("delete"))));
  }
}

TEST(NftParse, MalformedJsonAndMissingKeysAreErrorsNamingTheProblem) {
  ExpectInvalid(ParseNftRules,
                {
                    {"", "not a JSON object"},
                    {"table inet baton {", "not a JSON object"},
                    {R"({"nftables": [)", "not a JSON object"},
                    {"[]", "not a JSON object"},
                    {R"({"tables": []})", "no 'nftables' array"},
                    {R"({"nftables": {}})", "no 'nftables' array"},
                    {R"({"nftables": [{"rule": {"comment": "job-1-a1 1:100"}}]})",
                     "without an integer 'handle'"},
                    {R"({"nftables": [{"rule": {"handle": "7", "comment": "a 1:1"}}]})",
                     "without an integer 'handle'"},
                    {R"({"nftables": [{"rule": {"handle": 7, "comment": 12}}]})",
                     "'comment' is not a string"},
                });
}

TEST(NetCaps, AMalformedListingIsAnInternalErrorNamingWhatWasListed) {
  testing::ScriptedRunner runner;
  runner.Answer("nft -j list chain", {0, "{\"nftables\": 3}", ""});
  runner.Answer("tc -s class show", {0, "class htb 1:1 root rate 1Gbit ceil 1Gbit\n", ""});
  auto rules = NftCgroupRules(&runner, "baton_n1").Rules();
  auto classes = Htb(&runner, "eth7").Classes();
  const std::pair<absl::Status, std::string> cases[] = {
      {rules.status(), "inet baton_n1 out: nft -j: no 'nftables' array"},
      {classes.status(), "dev eth7: tc class 1:1: no 'Sent' counters"}};
  for (const auto& [status, what] : cases) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
    EXPECT_THAT(Message(status), HasSubstr(what));
  }
}

TEST(Htb, AMalformedQdiscListingIsAnErrorNamingTheMissingKey) {
  testing::ScriptedRunner runner;
  runner.Answer("tc -j qdisc show", {0, R"([{"handle":"1:","root":true}])", ""});
  auto root = Htb(&runner, "v0").EnsureRoot(1000, 0x20);
  ASSERT_FALSE(root.ok());
  EXPECT_THAT(Message(root.status()), HasSubstr("without 'kind'"));
  testing::ScriptedRunner text;
  text.Answer("tc -j qdisc show", {0, "qdisc htb 1: root refcnt 2\n", ""});
  auto not_json = Htb(&text, "v0").DeleteRoot();
  ASSERT_FALSE(not_json.ok());
  EXPECT_THAT(Message(not_json), HasSubstr("not a JSON array"));
}

TEST(Htb, EnsureClassSaysWhenItIsAlreadyThereAndUpdatesIt) {
  testing::ScriptedRunner runner;
  runner.Answer("tc -s class show", {0, kClasses, ""});
  Htb htb(&runner, "eth1");
  auto made = htb.EnsureClass(0x101, 10, 100, 2);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(*made, Ensured::kCreated);
  auto again = htb.EnsureClass(0xa0, 20, 200, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, Ensured::kAlreadyThere);
  EXPECT_THAT(runner.calls(), Contains("tc class add dev eth1 parent 1:1 classid 1:101 htb rate "
                                       "10mbit ceil 100mbit prio 2"));
  EXPECT_THAT(runner.calls(), Contains("tc class change dev eth1 parent 1:1 classid 1:a0 htb "
                                       "rate 20mbit ceil 200mbit prio 0"));
  EXPECT_TRUE(htb.DeleteClass(0x999).ok()) << "absent: nothing to do";
}

TEST(Htb, EnsureRootKeepsAnHtbRootAndReplacesAnyOther) {
  testing::ScriptedRunner replaced;
  replaced.Answer("tc -j qdisc show", {0, Recorded("tc_qdisc_noqueue.json"), ""});
  ASSERT_EQ(*Htb(&replaced, "v0").EnsureRoot(1000, 0x20), Ensured::kCreated);
  EXPECT_THAT(replaced.calls(),
              Contains("tc qdisc replace dev v0 root handle 1: htb default 20 r2q 1000"));
  testing::ScriptedRunner fresh;  // a device that has never been up lists no qdisc: []
  ASSERT_EQ(*Htb(&fresh, "v0").EnsureRoot(1000, 0x20), Ensured::kCreated);
  testing::ScriptedRunner kept;
  kept.Answer("tc -j qdisc show", {0, Recorded("tc_qdisc_htb.json"), ""});
  ASSERT_EQ(*Htb(&kept, "v0").EnsureRoot(1000, 0x20), Ensured::kAlreadyThere);
  for (const auto& c : kept.calls()) EXPECT_THAT(c, ::testing::Not(HasSubstr("qdisc replace")));
  testing::ScriptedRunner other_htb;  // an HTB root that is not baton's 1:
  other_htb.Answer("tc -j qdisc show",
                   {0, R"([{"kind":"htb","handle":"8001:","root":true,"options":{}}])", ""});
  ASSERT_EQ(*Htb(&other_htb, "v0").EnsureRoot(1000, 0x20), Ensured::kCreated);
}

TEST(Htb, DeleteRootLeavesAnotherRootAlone) {
  testing::ScriptedRunner other;
  other.Answer("tc -j qdisc show", {0, Recorded("tc_qdisc_noqueue.json"), ""});
  ASSERT_TRUE(Htb(&other, "v0").DeleteRoot().ok());
  EXPECT_THAT(other.calls(), ::testing::Not(Contains("tc qdisc del dev v0 root")));
  testing::ScriptedRunner ours;
  ours.Answer("tc -j qdisc show", {0, Recorded("tc_qdisc_htb.json"), ""});
  ASSERT_TRUE(Htb(&ours, "v0").DeleteRoot().ok());
  EXPECT_THAT(ours.calls(), Contains("tc qdisc del dev v0 root"));
}

TEST(Htb, AMissingDeviceIsNotFound) {
  testing::ScriptedRunner runner;
  runner.Answer("tc -j qdisc show", {1, "", "Cannot find device \"nope\"\n"});
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
  runner->Answer("tc -j qdisc show", {0, Recorded("tc_qdisc_htb.json"), ""});
  auto caps = NetCaps::Create(NetCapsOptions{.nic = "v0", .nic_mbps = 1000}, runner);
  ASSERT_TRUE(caps.ok());
  auto cls = (*caps)->Add("job-1-a1", "unified/b/job-1-a1", 2, /*ceil_mbps=*/300,
                          /*inference=*/false);
  ASSERT_TRUE(cls.ok());
  EXPECT_EQ(cls->ceil_mbps, 300u);
  runner->Answer("nft -j list chain", {0, testing::NftListing({{"job-1-a1 1:100", 9}}), ""});
  runner->Answer("tc -s class show", {0,
                                      "class htb 1:100 parent 1:1 rate 30Mbit ceil 300Mbit\n"
                                      " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n",
                                      ""});
  ASSERT_TRUE((*caps)->Remove("job-1-a1").ok());
  auto calls = runner->calls();
  auto rule = std::find(calls.begin(), calls.end(), "nft delete rule inet baton out handle 9");
  auto cls_del = std::find(calls.begin(), calls.end(), "tc class del dev ifb-v0 classid 1:100");
  ASSERT_NE(rule, calls.end());
  ASSERT_NE(cls_del, calls.end());
  EXPECT_LT(rule, cls_del);
}

TEST(IfbRedirect, NamesFitADeviceNameAndStayApart) {
  EXPECT_EQ(IfbNameFor("eth0"), "ifb-eth0");
  EXPECT_EQ(IfbNameFor("enp65s0f0np0"), "ifb-enpaecc3264") << "FNV-1a past 11 characters";
  for (const char* nic : {"enp65s0f0np0", "enp65s0f1np1", "bbiso123456a", "a23456789012345"}) {
    EXPECT_LE(IfbNameFor(nic).size(), 15u) << nic;
  }
  EXPECT_NE(IfbNameFor("enp65s0f0np0"), IfbNameFor("enp65s0f1np1"));
  EXPECT_EQ(IfbNameFor("enp65s0f0np0"), IfbNameFor("enp65s0f0np0")) << "the same after a restart";
  // ld the mark; jset 0x800000; ret -1 (match); ret 0.
  EXPECT_EQ(MarkFilterBytecode(0x800000),
            "4,32 0 0 4294963220,69 0 1 8388608,6 0 0 4294967295,6 0 0 0");
}

TEST(IfbRedirect, EnsureMakesTheDeviceTheHookAndTheFilterOnce) {
  testing::ScriptedRunner fresh;
  fresh.Answer("ip link show dev ifb-v0", {1, "", "Device \"ifb-v0\" does not exist.\n"});
  fresh.Answer("tc -j qdisc show dev v0", {0, Recorded("tc_qdisc_htb.json"), ""});
  IfbRedirect made(&fresh, "v0", "ifb-v0", 0x800000);
  ASSERT_EQ(*made.Ensure(0x30), Ensured::kCreated);
  const std::string add_filter = "tc filter add dev v0 egress pref 2983 bpf bytecode " +
                                 MarkFilterBytecode(0x800000) +
                                 " action mirred egress redirect dev ifb-v0";
  auto calls = fresh.calls();
  for (const std::string& c :
       {std::string("ip link add ifb-v0 type ifb"), std::string("ip link set dev ifb-v0 up"),
        std::string("tc qdisc add dev v0 clsact"), add_filter}) {
    EXPECT_THAT(calls, Contains(c));
  }
  EXPECT_LT(std::find(calls.begin(), calls.end(), "ip link add ifb-v0 type ifb"),
            std::find(calls.begin(), calls.end(), add_filter))
      << "the device before the filter that sends to it";

  testing::ScriptedRunner there;  // a restarted agent finds all of it
  there.Answer(
      "tc -j qdisc show dev v0",
      {0, R"([{"kind":"htb","handle":"1:","root":true},{"kind":"clsact","handle":"ffff:"}])", ""});
  there.Answer("tc filter show dev v0 egress pref 2983",
               {0,
                "filter protocol all pref 2983 bpf chain 0 handle 0x1 not_in_hw bytecode '" +
                    MarkFilterBytecode(0x800000) +
                    "'\n\taction order 1: mirred (Egress Redirect to device ifb-v0) stolen\n",
                ""});
  there.Answer("tc filter show dev v0 parent 1: pref 2983",
               {0,
                "filter parent 1: protocol all pref 2983 bpf chain 0 handle 0x1 flowid 1:30 "
                "not_in_hw bytecode '" +
                    MarkFilterBytecode(0x800000) + "'\n",
                ""});
  ASSERT_EQ(*IfbRedirect(&there, "v0", "ifb-v0", 0x800000).Ensure(0x30), Ensured::kAlreadyThere);
  for (const auto& c : there.calls()) {
    EXPECT_THAT(c, ::testing::Not(::testing::AnyOf(HasSubstr(" add "), HasSubstr(" del "))));
  }
  // The same filter with another mark (a changed --net-cap-mark) is replaced.
  auto remarked = IfbRedirect(&there, "v0", "ifb-v0", 0x400000).Ensure(0x30);
  ASSERT_EQ(*remarked, Ensured::kCreated);
  EXPECT_THAT(there.calls(), Contains("tc filter del dev v0 egress pref 2983"));
  EXPECT_THAT(there.calls(), Contains(HasSubstr("bytecode " + MarkFilterBytecode(0x400000))));
}

TEST(IfbRedirect, ANoIfbKernelIsAFailedPreconditionNamingTheDevice) {
  testing::ScriptedRunner runner;
  runner.Answer("ip link show", {1, "", "does not exist"});
  runner.Answer("ip link add", {2, "", "Error: Unknown device type.\n"});
  auto r = IfbRedirect(&runner, "v0", "ifb-v0", 1).Ensure(0x30);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(r.status()), HasSubstr("IFB device ifb-v0"));
  EXPECT_THAT(Message(r.status()), HasSubstr("Unknown device type"));
  EXPECT_THAT(runner.calls(), ::testing::Not(Contains(HasSubstr("tc filter add"))));
}

TEST(IfbRedirect, RemoveLeavesAClsactThatOthersStillUse) {
  testing::ScriptedRunner shared;
  shared.Answer("tc -j qdisc show dev v0", {0, R"([{"kind":"clsact","handle":"ffff:"}])", ""});
  shared.Answer("tc filter show dev v0 egress pref 2983", {0, "filter pref 2983 bpf\n", ""});
  shared.Answer("tc filter show dev v0 ingress", {0, "filter pref 1 bpf (cilium)\n", ""});
  ASSERT_TRUE(IfbRedirect(&shared, "v0", "ifb-v0", 1).Remove().ok());
  EXPECT_THAT(shared.calls(), Contains("tc filter del dev v0 egress pref 2983"));
  EXPECT_THAT(shared.calls(), ::testing::Not(Contains("tc qdisc del dev v0 clsact")));
  EXPECT_THAT(shared.calls(), Contains("ip link del dev ifb-v0"));
  testing::ScriptedRunner alone;
  alone.Answer("tc -j qdisc show dev v0", {0, R"([{"kind":"clsact","handle":"ffff:"}])", ""});
  ASSERT_TRUE(IfbRedirect(&alone, "v0", "ifb-v0", 1).Remove().ok());
  EXPECT_THAT(alone.calls(), Contains("tc qdisc del dev v0 clsact"));
  testing::ScriptedRunner gone;  // no NIC, no IFB: nothing to do
  gone.Answer("tc -j qdisc show", {1, "", "Cannot find device"});
  gone.Answer("ip link show", {1, "", "does not exist"});
  ASSERT_TRUE(IfbRedirect(&gone, "v0", "ifb-v0", 1).Remove().ok());
  EXPECT_THAT(gone.calls(), ::testing::Not(Contains(HasSubstr(" del "))));
}

TEST(IfbRedirect, TheCapMarkIsANonzero32BitNumber) {
  EXPECT_EQ(*ParseCapMark("0x00800000"), 0x800000u);
  EXPECT_EQ(*ParseCapMark("0X10"), 0x10u);
  EXPECT_EQ(*ParseCapMark("8388608"), 0x800000u);
  EXPECT_EQ(*ParseCapMark("0xffffffff"), 0xffffffffu);
  for (const char* bad :
       {"", "0", "0x0", "0x", "zz", "0x1g", "99999999999", "0x100000000", "-1", " 16"}) {
    auto m = ParseCapMark(bad);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(Message(m.status()), HasSubstr(std::string("'") + bad + "'"));
  }
}

TEST(NetCaps, AZeroMarkIsRefused) {
  auto caps = NetCaps::Create(NetCapsOptions{.nic = "v0", .nic_mbps = 1000, .mark = 0},
                              std::make_shared<testing::ScriptedRunner>());
  EXPECT_EQ(caps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(caps.status()), HasSubstr("mark"));
}

}  // namespace
}  // namespace baton
