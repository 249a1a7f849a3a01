// Hostile and careless requests: bounds on what one spec may carry (refused by the
// coordinator, the field named), fair use of the submit path per tenant (a flood is
// throttled with a retry hint and stores nothing), and listings paged so that any number
// of admitted jobs can be listed.
#include <string>

#include "coordinator/job_state.h"
#include "coordinator/policy_config.h"
#include "coordinator/spec_validation.h"
#include "coordinator/submit_limiter.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

std::string Why(const absl::Status& s) { return std::string(s.message()); }

ClusterShape AnyShape() { return ClusterShape{}; }

absl::Status Admit(v1::JobSpec spec, const Policy& policy = TestPolicy()) {
  return ValidateAndDefaultSpec(Alice(), policy, AnyShape(), &spec);
}

// The largest spec the default bounds admit: every bound reached, none passed.
v1::JobSpec AtEveryBound() {
  const Policy::Admission limits;
  v1::JobSpec s = Spec();
  s.set_name(std::string(63, 'n'));
  s.clear_command();
  s.add_command("/bin/echo");
  s.add_command(std::string(limits.max_command_bytes - 10 - 1, 'c'));  // "/bin/echo\0" + arg\0
  // max_env_entries variables whose names and values add up to max_env_bytes exactly.
  uint64_t per = limits.max_env_bytes / limits.max_env_entries;  // 256 bytes each
  for (uint32_t i = 0; i < limits.max_env_entries; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "V%04u", i);
    (*s.mutable_env())[name] = std::string(per - 5 - 2, 'v');  // name + value + '=' + '\0'
  }
  for (uint32_t i = 0; i < limits.max_selectors; ++i) {
    (*s.mutable_node_selector())["k" + std::to_string(i)] = "";
  }
  for (uint32_t i = 0; i < limits.max_tolerations; ++i) {
    auto* t = s.add_tolerations();
    t->set_key(std::string(Policy::kMaxNameBytes - 4, 't') + std::to_string(1000 + i));
    t->set_exists(true);
  }
  return s;
}

TEST(SpecBounds, ASpecAtEveryBoundIsAdmitted) {
  v1::JobSpec s = AtEveryBound();
  size_t env_bytes = 0;
  for (const auto& [k, v] : s.env()) env_bytes += k.size() + v.size() + 2;
  ASSERT_EQ(env_bytes, Policy::Admission().max_env_bytes) << "the fixture sits on the bound";
  absl::Status st = Admit(s);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_LT(s.ByteSizeLong(), static_cast<size_t>(kMaxRequestBytes));
}

TEST(SpecBounds, EachBoundPassedByOneIsRefusedWithItsField) {
  struct Case {
    const char* what;
    std::function<void(v1::JobSpec*)> mutate;
    const char* field;
  } cases[] = {
      {"one more env entry", [](v1::JobSpec* s) { (*s->mutable_env())["EXTRA"] = ""; }, "spec.env"},
      {"one more env byte", [](v1::JobSpec* s) { (*s->mutable_env())["V0000"] += "x"; },
       "spec.env"},
      {"5 MiB of env",
       [](v1::JobSpec* s) {
         s->clear_env();
         for (int i = 0; i < 40; ++i) {
           (*s->mutable_env())["BIG" + std::to_string(i)] = std::string(128 << 10, 'x');
         }
       },
       "spec.env"},
      {"one more command byte", [](v1::JobSpec* s) { *s->mutable_command(1) += "x"; },
       "spec.command"},
      {"one more selector", [](v1::JobSpec* s) { (*s->mutable_node_selector())["more"] = ""; },
       "spec.node_selector"},
      {"100k selectors",
       [](v1::JobSpec* s) {
         for (int i = 0; i < 100'000; ++i) {
           (*s->mutable_node_selector())["s" + std::to_string(i)] = "v";
         }
       },
       "spec.node_selector"},
      {"one more toleration", [](v1::JobSpec* s) { s->add_tolerations()->set_key("more"); },
       "spec.tolerations"},
      {"a 254-byte selector value",
       [](v1::JobSpec* s) { (*s->mutable_node_selector())["k0"] = std::string(254, 'v'); },
       "spec.node_selector"},
      {"a 1 MiB name", [](v1::JobSpec* s) { s->set_name(std::string(1 << 20, 'n')); }, "spec.name"},
      {"a 1 MiB pool", [](v1::JobSpec* s) { s->set_pool(std::string(1 << 20, 'p')); }, "spec.pool"},
      {"one argument of 128 KiB",
       [](v1::JobSpec* s) {
         s->clear_env();
         (*s->mutable_env())["ONE"] = std::string(128 << 10, 'x');
       },
       "spec.env"},
      {"a NUL in an argument", [](v1::JobSpec* s) { s->set_command(1, std::string("a\0b", 3)); },
       "spec.command"},
      {"a 5000-byte working dir",
       [](v1::JobSpec* s) { s->set_working_dir("/" + std::string(5000, 'd')); },
       "spec.working_dir"},
  };
  for (const auto& c : cases) {
    v1::JobSpec s = AtEveryBound();
    c.mutate(&s);
    absl::Status st = Admit(s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(Why(st).rfind(c.field, 0), 0u) << c.what << ": " << Why(st).substr(0, 200);
    EXPECT_LT(Why(st).size(), 400u) << c.what << ": the error does not echo the input";
  }
}

TEST(SpecBounds, ThePolicySetsTheBoundsWithinHardCeilings) {
  auto p = ParsePolicy(
      "admission:\n  max_env_entries: 8\n  max_env_bytes: 1Ki\n  max_selectors: 2\n"
      "  submit_rate: 5\n  submit_burst: 10\n  max_pending_per_tenant: 3\n");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->admission.max_env_entries, 8u);
  EXPECT_EQ(p->admission.max_env_bytes, 1024u);
  EXPECT_EQ(p->admission.submit_burst, 10u);
  EXPECT_EQ(p->admission.max_pending_per_tenant, 3u);
  v1::JobSpec s = Spec();
  for (int i = 0; i < 9; ++i) (*s.mutable_env())["V" + std::to_string(i)] = "1";
  Policy policy = *p;
  policy.access = TestPolicy().access;
  EXPECT_NE(Why(Admit(s, policy)).find("admission.max_env_entries"), std::string::npos);

  auto over = ParsePolicy("admission:\n  max_env_bytes: 1Mi\n  max_command_bytes: 64Ki\n");
  EXPECT_NE(Why(over.status()).find("max_env_bytes + max_command_bytes"), std::string::npos);
  auto burst = ParsePolicy("admission:\n  submit_rate: 5\n  submit_burst: 0\n");
  EXPECT_NE(Why(burst.status()).find("admission.submit_burst"), std::string::npos);
  auto huge = ParsePolicy("# " + std::string(kMaxPolicyBytes, 'x') + "\n");
  EXPECT_NE(Why(huge.status()).find("a policy may have"), std::string::npos);
}

TEST(SubmitLimiter, RefillsAtTheRateUpToTheBurst) {
  Policy::Admission limits;
  limits.submit_rate = 10;
  limits.submit_burst = 5;
  SubmitLimiter l;
  absl::Time t = absl::FromUnixSeconds(1'000);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.TakeToken("a", limits, t).ok()) << i;
  absl::Status empty = l.TakeToken("a", limits, t);
  EXPECT_EQ(empty.code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(RetryAfter(empty).has_value());
  EXPECT_EQ(*RetryAfter(empty), absl::Milliseconds(100)) << "one token at 10/s";
  EXPECT_NE(Why(empty).find("retry in 1 s"), std::string::npos) << Why(empty);
  EXPECT_TRUE(l.TakeToken("b", limits, t).ok()) << "another tenant has its own bucket";
  EXPECT_TRUE(l.TakeToken("a", limits, t + absl::Milliseconds(100)).ok());
  EXPECT_FALSE(l.TakeToken("a", limits, t + absl::Milliseconds(150)).ok());
  // A long pause refills to the burst, never beyond.
  t += absl::Hours(1);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(l.TakeToken("a", limits, t).ok()) << i;
  EXPECT_FALSE(l.TakeToken("a", limits, t).ok());
  limits.submit_rate = 0;
  EXPECT_TRUE(l.TakeToken("a", limits, t).ok()) << "rate 0: no limit";
}

TEST(SubmitLimiter, RefusesATenantAtItsWaitingCap) {
  Policy::Admission limits;
  limits.max_pending_per_tenant = 2;
  EXPECT_TRUE(SubmitLimiter::CheckWaiting("a", 1, limits).ok());
  absl::Status full = SubmitLimiter::CheckWaiting("a", 2, limits);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(Why(full).find("tenant a already has 2 jobs waiting"), std::string::npos) << Why(full);
}

JobManagerOptions LimitedOptions(double rate, uint32_t burst, uint32_t max_waiting) {
  JobManagerOptions o = TestOptions();
  o.policy.admission.submit_rate = rate;
  o.policy.admission.submit_burst = burst;
  o.policy.admission.max_pending_per_tenant = max_waiting;
  return o;
}

TEST(FairUse, AFloodIsThrottledAndStoresNothingWhileOtherTenantsSubmit) {
  Harness h(LimitedOptions(/*rate=*/200, /*burst=*/1000, /*max_waiting=*/10'000));
  h.Connect("n1", 4);
  // 2,000 submits in the same instant from vision: the burst passes, the rest wait.
  int accepted = 0, throttled = 0;
  uint64_t commits_before = 0;
  for (int i = 0; i < 2000; ++i) {
    if (i == 1000) {
      h.jm().Flush();
      commits_before = h.jm().commits();
    }
    absl::StatusOr<uint64_t> id = h.Submit(Spec());
    if (id.ok()) {
      ++accepted;
    } else {
      ASSERT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted) << id.status();
      ASSERT_TRUE(RetryAfter(id.status()).has_value());
      EXPECT_LE(*RetryAfter(id.status()), absl::Milliseconds(5));
      ++throttled;
    }
  }
  EXPECT_EQ(accepted, 1000);
  EXPECT_EQ(throttled, 1000);
  h.jm().Flush();
  EXPECT_EQ(h.jm().commits(), commits_before) << "throttled submits write nothing";
  // speech is another tenant: unaffected, and the scheduler still places work.
  EXPECT_TRUE(h.Submit(Spec(), Bob()).ok());
  h.jm().SchedulePass();
  h.jm().Flush();
  v1::ListRequest running;
  running.add_states(v1::JOB_STATE_SCHEDULED);
  EXPECT_GT(h.jm().List(Admin(), running)->jobs_size(), 0);
  // A second later 200 more tokens are there.
  h.clock().Advance(absl::Seconds(1));
  int later = 0;
  for (int i = 0; i < 250; ++i) later += h.Submit(Spec()).ok();
  EXPECT_EQ(later, 200);
}

TEST(FairUse, BadSpecsSpendTokensToo) {
  Harness h(LimitedOptions(/*rate=*/1, /*burst=*/3, /*max_waiting=*/100));
  v1::JobSpec bad = Spec();
  bad.set_priority_class("no-such-class");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.Submit(bad).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(h.Submit(bad).status().code(), absl::StatusCode::kResourceExhausted)
      << "a script looping on a bad spec is throttled, not logged 200 times a second";
}

TEST(FairUse, WaitingJobsPerTenantAreCapped) {
  Harness h(LimitedOptions(/*rate=*/0, /*burst=*/0, /*max_waiting=*/3));
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(*h.Submit(Spec(1, 1)));
  absl::StatusOr<uint64_t> fourth = h.Submit(Spec(1, 1));
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(Why(fourth.status()).find("max_pending_per_tenant"), std::string::npos);
  EXPECT_TRUE(h.Submit(Spec(1, 1), Bob()).ok()) << "per tenant";
  ASSERT_TRUE(h.Cancel(ids[0]).ok());
  EXPECT_TRUE(h.Submit(Spec(1, 1)).ok()) << "a cancelled job leaves the count";
  // Jobs that start leave the queue too, and a restart counts the queue again.
  h.Restart();
  EXPECT_EQ(h.Submit(Spec(1, 1)).status().code(), absl::StatusCode::kResourceExhausted);
  h.Connect("n1", 4);
  h.jm().SchedulePass();
  h.jm().Flush();
  EXPECT_TRUE(h.Submit(Spec(1, 1)).ok());
}

TEST(Listing, PagesCoverEveryJobOnceAndStayUnderThePageSize) {
  Harness h(LimitedOptions(/*rate=*/0, /*burst=*/0, /*max_waiting=*/10'000));
  std::set<uint64_t> submitted;
  for (int i = 0; i < 60; ++i) {
    v1::JobSpec s = Spec(1, 0, {"/bin/echo", std::string(60 << 10, 'x')});  // ~60 KiB each
    submitted.insert(*h.Submit(s));
  }
  v1::ListRequest req;
  std::set<uint64_t> seen;
  int pages = 0;
  do {
    absl::StatusOr<v1::ListResponse> page = h.jm().List(Alice(), req);
    ASSERT_TRUE(page.ok()) << page.status();
    ++pages;
    EXPECT_LE(page->ByteSizeLong(), kListPageBytes + (64 << 10));
    for (const auto& job : page->jobs()) EXPECT_TRUE(seen.insert(job.id()).second) << job.id();
    req.set_page_token(page->next_page_token());
  } while (!req.page_token().empty() && pages < 100);
  EXPECT_EQ(seen, submitted);
  EXPECT_GE(pages, 2);
  // --limit stops a page early, and the token continues after it.
  v1::ListRequest five;
  five.set_limit(5);
  auto first = h.jm().List(Alice(), five);
  ASSERT_EQ(first->jobs_size(), 5);
  five.set_page_token(first->next_page_token());
  auto second = h.jm().List(Alice(), five);
  ASSERT_EQ(second->jobs_size(), 5);
  EXPECT_GT(second->jobs(0).id(), first->jobs(4).id());
  v1::ListRequest forged;
  forged.set_page_token("p1.x");
  EXPECT_EQ(h.jm().List(Alice(), forged).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MasterPort, SkipsThePortsTakenOnTheNodeAndStaysBelowTheEphemeralRange) {
  uint32_t first = PickMasterPort(7, 1, {});
  EXPECT_GE(first, 20000u);
  EXPECT_LT(first, 32768u);
  EXPECT_EQ(PickMasterPort(7, 1, {first}), first + 1 < 32000 ? first + 1 : 20000);
  EXPECT_EQ(PickMasterPort(7, 1, {first, first + 1}), first + 2);
  // The hash collides for these two: the second must still differ.
  EXPECT_EQ(PickMasterPort(1, 32, {}), PickMasterPort(2, 1, {}));
  EXPECT_NE(PickMasterPort(2, 1, {PickMasterPort(1, 32, {})}), PickMasterPort(1, 32, {}));
}

TEST(MasterPort, TwoGangsLedFromOneNodeGetDifferentPorts) {
  Harness h;
  h.Connect("n1", 4);
  auto a = h.Submit(Spec(1, 1));
  auto b = h.Submit(Spec(1, 1));
  h.jm().SchedulePass();
  h.jm().Flush();
  uint32_t pa = h.Get(*a).attempts(0).master_port(), pb = h.Get(*b).attempts(0).master_port();
  EXPECT_NE(pa, pb);
  EXPECT_GE(std::min(pa, pb), 20000u);
  EXPECT_LT(std::max(pa, pb), 32000u);
}

// Nothing is kept forever: finished jobs and their events go after the retention period
// (30 days by default), exactly those, from memory and from the store.
TEST(Retention, DeletesExactlyTheFinishedJobsOlderThanThePeriod) {
  Harness h;
  const int64_t day = 24 * 3600 * 1000LL;
  uint64_t a = *h.Submit(Spec(1, 1)), b = *h.Submit(Spec(1, 1)), live = *h.Submit(Spec(1, 1));
  ASSERT_TRUE(h.Cancel(a).ok());
  int64_t a_end = h.clock().NowMs();
  h.clock().AdvanceMs(day);
  ASSERT_TRUE(h.Cancel(b).ok());
  int64_t b_end = h.clock().NowMs();
  ASSERT_EQ(h.State(a), v1::JOB_STATE_CANCELLED);
  LogQuery about_a;
  about_a.job_id = a;
  ASSERT_FALSE(h.jm().event_log().Read(about_a)->empty());

  h.clock().SetMs(a_end + 30 * day - 1);  // a is a millisecond short of 30 days
  h.Tick();
  EXPECT_TRUE(h.jm().Get(Admin(), a).ok()) << "not yet";
  h.clock().SetMs(a_end + 30 * day + 60'000);
  h.Tick();
  EXPECT_EQ(h.jm().Get(Admin(), a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(h.jm().Get(Admin(), b).ok()) << "b ended a day later";
  EXPECT_EQ(h.State(live), v1::JOB_STATE_PENDING) << "unfinished jobs stay, however old";
  EXPECT_TRUE(h.jm().event_log().Read(about_a)->empty()) << "its events went with it";

  h.Restart();  // and from the store
  EXPECT_EQ(h.jm().Get(Admin(), a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(h.jm().Get(Admin(), b).ok());
  EXPECT_TRUE(h.jm().event_log().Read(about_a)->empty());
  h.clock().SetMs(b_end + 30 * day + 120'000);
  h.Tick();
  EXPECT_EQ(h.jm().Get(Admin(), b).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(h.State(live), v1::JOB_STATE_PENDING);
  EXPECT_TRUE(h.Submit(Spec()).ok()) << "ids keep growing; nothing else changed";
}

}  // namespace
}  // namespace baton::testing
