// Idempotent submits: a retried submit (its reply lost in a failover) makes one job.
#include "coordinator/submit_keys.h"

#include "gtest/gtest.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

TEST(SubmitKeys, KeysAreChecked) {
  struct Case {
    std::string key;
    bool ok;
  };
  for (const Case& c : std::vector<Case>{{"", true},
                                         {"0123456789abcdef0123456789abcdef", true},
                                         {std::string(64, 'k'), true},
                                         {std::string(65, 'k'), false},
                                         {"with space", false},
                                         {"tab\t", false},
                                         {"\xc3\xa9", false}}) {
    EXPECT_EQ(SubmitKeys::Check(c.key).ok(), c.ok) << "'" << c.key << "'";
  }
}

TEST(SubmitKeys, AKeyIsTheUsersAndForgottenOnlyOnceOldAndItsJobDone) {
  SubmitKeys keys(absl::Hours(1));
  absl::Time t0 = absl::FromUnixSeconds(1'000'000);
  keys.Add("alice", "k", 7, t0);
  keys.Add("alice", "k", 9, t0);  // the first stays
  EXPECT_EQ(keys.Find("alice", "k"), 7u);
  EXPECT_EQ(keys.Find("bob", "k"), std::nullopt);
  EXPECT_EQ(keys.Find("alice", ""), std::nullopt);
  keys.Add("bob", "k", 8, t0 + absl::Minutes(30));
  keys.Expire(t0 + absl::Minutes(59), [](uint64_t) { return false; });
  EXPECT_EQ(keys.size(), 2u);
  keys.Expire(t0 + absl::Minutes(61), [](uint64_t id) { return id == 7; });  // 7 still live
  EXPECT_EQ(keys.Find("alice", "k"), 7u);
  keys.Expire(t0 + absl::Minutes(91), [](uint64_t) { return false; });
  EXPECT_EQ(keys.Find("bob", "k"), std::nullopt);
}

TEST(SubmitKeys, ARetriedSubmitMakesOneJobAlsoAfterARestart) {
  Harness h;
  auto first = h.Submit(Spec(), Alice(), "retry-me");
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = h.Submit(Spec(), Alice(), "retry-me");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  auto bobs = h.Submit(Spec(), Bob(), "retry-me");  // another user's key is another key
  ASSERT_TRUE(bobs.ok());
  EXPECT_NE(*bobs, *first);
  auto other = h.Submit(Spec(), Alice(), "another");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
  EXPECT_EQ(h.Get(*first).idempotency_key(), "retry-me");
  // A new leader (or a restarted coordinator) knows the keys of the jobs it loaded.
  h.Restart();
  auto after = h.Submit(Spec(), Alice(), "retry-me");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *first);
  auto bad = h.Submit(Spec(), Alice(), std::string(65, 'x'));
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  auto list = h.jm().List(Admin(), v1::ListRequest());
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs_size(), 3);
}

}  // namespace
}  // namespace baton::testing
