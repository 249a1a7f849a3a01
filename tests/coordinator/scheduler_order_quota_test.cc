// Scheduler rules, one test each: queue order (class, nominal before borrowers, fair
// share, age, id), quotas (borrowing, lending and borrowing limits, inference never
// borrowing, reclaim), cooldowns, per-job limits, and the usage ledger.
#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"

namespace baton::sched {
namespace {

using testing::MakeGang;
using testing::MakeJob;
using testing::MakeNode;
using testing::NodeSpec;
using testing::OutcomeOf;
using testing::PlacementOf;
using testing::TestPolicy;
using testing::Victims;

using testing::kNow;

ClusterView OneNode(uint32_t gpus) {
  ClusterView v;
  v.nodes.push_back(MakeNode("n1", NodeSpec{.gpus = gpus, .numa = 1}));
  return v;
}

TEST(SchedulerOrder, HigherClassRunsFirstWhateverItsAge) {
  // One free GPU. The experiment job waited longer, but classes are strict: the training
  // job takes the GPU.
  ClusterView v = OneNode(1);
  v.pending = {MakeJob(1, "a", "experiment", {.submitted = 0}),
               MakeJob(2, "a", "training", {.submitted = 500})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
  EXPECT_EQ(OutcomeOf(d, 2).position, 1u);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(OutcomeOf(d, 1).position, 2u);
}

TEST(SchedulerOrder, JobsWithinNominalGoBeforeBorrowers) {
  // Tenant a has no nominal GPUs (every job of it borrows) and no usage; tenant b has one
  // nominal GPU and a lot of usage. Within the class, b's job is within nominal and goes
  // first despite its worse fair share.
  ClusterView v = OneNode(1);
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("a", 1, 0), testing::Tenant("b", 1, 1)};
  v.usage = {{"b", 1e6}};
  v.pending = {MakeJob(1, "a", "training", {.submitted = 0}),
               MakeJob(2, "b", "training", {.submitted = 100})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
  EXPECT_NE(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
}

TEST(SchedulerOrder, FairShareIsDecayedUsageOverWeightLowestFirst) {
  // a: usage 100 / weight 1 = 100; b: usage 200 / weight 4 = 50. b goes first although a
  // submitted earlier.
  ClusterView v = OneNode(1);
  Policy p = TestPolicy();
  TenantPolicy a, b;
  a.name = "a";
  b.name = "b";
  b.weight = 4;
  p.tenants = {a, b};
  v.usage = {{"a", 100}, {"b", 200}};
  v.pending = {MakeJob(1, "a", "training", {.submitted = 0}),
               MakeJob(2, "b", "training", {.submitted = 100})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
  EXPECT_EQ(OutcomeOf(d, 1).position, 2u);
}

TEST(SchedulerOrder, AgeThenIdBreakTies) {
  // Same class and tenant: the oldest first; equal submit times by id.
  ClusterView v = OneNode(0);
  v.pending = {MakeJob(5, "a", "training", {.submitted = 20}),
               MakeJob(4, "a", "training", {.submitted = 10}),
               MakeJob(3, "a", "training", {.submitted = 10})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(d.outcomes.size(), 3u);
  EXPECT_EQ(d.outcomes[0].job, 3u);
  EXPECT_EQ(d.outcomes[1].job, 4u);
  EXPECT_EQ(d.outcomes[2].job, 5u);
}

Policy TwoTenants(uint32_t a_nominal, uint32_t b_nominal, uint32_t b_lends,
                  uint32_t a_borrows = 1'000'000) {
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("a", 1, a_nominal, 1'000'000, a_borrows),
               testing::Tenant("b", 1, b_nominal, b_lends)};
  return p;
}

TEST(SchedulerQuota, BorrowsIdleQuotaUpToTheLendersLendingLimit) {
  // 8 GPUs, nominal 4 each; b lends at most 2 of its idle 4. a may take 6 (4 + 2
  // borrowed), not 7.
  ClusterView v = OneNode(8);
  v.pending = {MakeJob(1, "a", "training", {.gpus = 6})};
  Decisions d = Plan(v, TwoTenants(4, 4, 2), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kPlaced);

  v.pending = {MakeJob(1, "a", "training", {.gpus = 7})};
  d = Plan(v, TwoTenants(4, 4, 2), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kWaitForQuota);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("lend no more"), std::string::npos)
      << OutcomeOf(d, 1).reason;
}

TEST(SchedulerQuota, BorrowingLimitCapsWhatATenantBorrows) {
  // a already runs its nominal 4; its borrowing limit is 1, so 2 more wait for quota
  // while the GPUs sit idle.
  ClusterView v = OneNode(8);
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 2})};
  Decisions d = Plan(v, TwoTenants(4, 4, 4, /*a_borrows=*/1), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kWaitForQuota);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("borrowing limit"), std::string::npos);
}

TEST(SchedulerQuota, InferenceNeverBorrows) {
  // The serving tenant has 2 nominal GPUs and runs one; a 2-GPU inference job would go
  // over, and inference classes never borrow, so it waits though 7 GPUs are idle.
  ClusterView v = OneNode(8);
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("serve", 1, 2)};
  v.running = {MakeGang(10, "serve", "inference", v, {"n1"}, {0}, 0)};
  v.pending = {MakeJob(1, "serve", "inference", {.gpus = 2})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kWaitForQuota);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("never borrows"), std::string::npos);
}

TEST(SchedulerQuota, LenderReclaimsABorrowerEvenAtEqualPriority) {
  // b runs two 4-GPU training gangs on 8 GPUs: 4 of them borrowed from a. a's 4-GPU
  // training job is within its nominal: the borrower with the least lost work (11, which
  // checkpointed a minute ago) is reclaimed although it is the same class.
  ClusterView v = OneNode(8);
  v.running = {MakeGang(10, "b", "training", v, {"n1"}, {0, 1, 2, 3}, 0),
               MakeGang(11, "b", "training", v, {"n1"}, {4, 5, 6, 7}, 0, kNow - 60'000)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 4})};
  Decisions d = Plan(v, TwoTenants(4, 4, 4), kNow);
  ASSERT_EQ(d.evictions.size(), 1u);
  EXPECT_EQ(d.evictions[0].victim, 11u);
  EXPECT_EQ(d.evictions[0].preemptor, 1u);
  EXPECT_EQ(d.evictions[0].reason, EvictionReason::kQuotaReclaimed);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kReserved);
}

TEST(SchedulerQuota, ReclaimTakesOnlyWhatIsBorrowed) {
  // A 6-GPU node; b runs three 2-GPU gangs with a nominal of 4, so 2 GPUs are borrowed.
  // a asking 2 reclaims exactly one gang; a asking 4 would need b below its nominal, so
  // nothing is evicted.
  ClusterView v = OneNode(6);
  v.running = {MakeGang(10, "b", "training", v, {"n1"}, {0, 1}, 0),
               MakeGang(11, "b", "training", v, {"n1"}, {2, 3}, 0),
               MakeGang(12, "b", "training", v, {"n1"}, {4, 5}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 2})};
  Decisions d = Plan(v, TwoTenants(4, 4, 4), kNow);
  EXPECT_EQ(d.evictions.size(), 1u);

  v.pending = {MakeJob(1, "a", "training", {.gpus = 4})};
  d = Plan(v, TwoTenants(4, 4, 4), kNow);
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_NE(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
}

TEST(SchedulerQuota, ReclaimTakesOnlyWhatWasBorrowedAtThePassStart) {
  // b runs a 4-GPU training gang within its nominal of 4. In this pass its 2-GPU labeling
  // job (a higher class, first in line) is placed by borrowing. a's 4-GPU training job is
  // within a's nominal but finds 2 GPUs free: reclaiming b's running gang would cost b a
  // gang it ran within its nominal for a borrowing placed a moment ago, so a waits.
  ClusterView v = OneNode(8);
  v.running = {MakeGang(10, "b", "training", v, {"n1"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "b", "labeling", {.gpus = 2}), MakeJob(2, "a", "training", {.gpus = 4})};
  Decisions d = Plan(v, TwoTenants(4, 4, 4), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr) << "b borrows for its labeling job";
  EXPECT_TRUE(d.evictions.empty()) << "victim " << d.evictions[0].victim;
  EXPECT_EQ(PlacementOf(d, 2), nullptr);
}

TEST(SchedulerQuota, BorrowingPreemptorEvictsOnlyBorrowers) {
  // Two full nodes. a (nominal 0) would borrow 8 GPUs of b's idle nominal for a labeling
  // job. e (no quota) runs an experiment gang with little lost work; d (nominal 0)
  // borrows for an older one. A borrowing preemptor may take only from borrowers: d.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("a", 1, 0), testing::Tenant("b", 1, 8), testing::Tenant("d", 1, 0)};
  std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  v.running = {MakeGang(10, "e", "experiment", v, {"n1"}, all, 0, kNow - 1000),
               MakeGang(11, "d", "experiment", v, {"n2"}, all, 0)};
  v.pending = {MakeJob(1, "a", "labeling", {.gpus = 8})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(Victims(d), std::vector<JobId>{11});
}

TEST(SchedulerQuota, SpecOverTheTenantsQuotaIsInfeasible) {
  ClusterView v = OneNode(8);
  v.pending = {MakeJob(1, "a", "training", {.gpus = 8})};
  Decisions d = Plan(v, TwoTenants(4, 4, 4, /*a_borrows=*/2), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("tenant a"), std::string::npos);
}

TEST(SchedulerLimits, SpecOverAPerJobLimitIsInfeasible) {
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  Policy p = TestPolicy();
  p.job_limits.max_gpus_per_job = 8;
  v.pending = {MakeJob(1, "a", "training", {.nodes = 2, .gpus = 8}),
               MakeJob(2, "a", "training", {.nodes = 1, .gpus = 8})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("GPUs per job"), std::string::npos);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
}

TEST(SchedulerLimits, CheckRequestNamesTheRuleABadSpecBreaks) {
  // What admission calls at submit: the same rules Plan reports as infeasible.
  Policy p = TwoTenants(4, 4, 4, /*a_borrows=*/2);
  p.pools = {PoolPolicy{"inference", {"inference"}}};
  p.job_limits.max_nodes = 4;
  auto why = [&](const std::string& tenant, const std::string& cls, testing::JobSpec spec) {
    return std::string(CheckRequest(p, tenant, cls, testing::MakeRequest(spec)).message());
  };
  EXPECT_EQ(why("a", "training", {.gpus = 2}), "");
  EXPECT_NE(why("a", "nightly", {}).find("unknown priority class"), std::string::npos);
  EXPECT_NE(why("a", "training", {.nodes = 5}).find("over the policy's limit"), std::string::npos);
  EXPECT_NE(why("a", "training", {.pool = "inference"}).find("may not run in pool"),
            std::string::npos);
  EXPECT_NE(why("a", "training", {.gpus = 2, .mig = "1g.18gb"}).find("never runs on a MIG slice"),
            std::string::npos);
  EXPECT_NE(why("a", "inference", {.gpus = 2, .mig = "1g.18gb", .mpi = true}).find("mpi"),
            std::string::npos);
  EXPECT_NE(why("a", "training", {.gpus = 7}).find("more than tenant a may ever use"),
            std::string::npos);
  // Inference never borrows: its nominal alone bounds it.
  EXPECT_NE(why("b", "inference", {.gpus = 5, .pool = "inference"}).find("never borrows"),
            std::string::npos);
  // A tenant without a quota is not bounded by one.
  EXPECT_EQ(why("c", "training", {.gpus = 64}), "");
}

TEST(SchedulerCooldown, DoublesPerEvictionUpToTheCap) {
  PriorityClass c;
  c.cooldown_base_s = 30;
  c.cooldown_cap_s = 480;
  EXPECT_EQ(CooldownMs(c, 0), 0);
  EXPECT_EQ(CooldownMs(c, 1), 30'000);
  EXPECT_EQ(CooldownMs(c, 2), 60'000);
  EXPECT_EQ(CooldownMs(c, 4), 240'000);
  EXPECT_EQ(CooldownMs(c, 5), 480'000);
  EXPECT_EQ(CooldownMs(c, 40), 480'000);
}

TEST(SchedulerCooldown, JobInCooldownIsNotStartedEvenWithRoom) {
  ClusterView v = OneNode(8);
  PendingJob j = MakeJob(1, "a", "training");
  j.evictions = 2;
  j.cooldown_until = kNow + 5'000;
  v.pending = {j};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kInCooldown);
  EXPECT_TRUE(d.placements.empty());
  // Once the cooldown is over it starts.
  d = Plan(v, TestPolicy(), kNow + 5'000);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
}

TEST(SchedulerHold, AHeldJobIsNeverStartedAndTakesNoQuotaFromTheJobsBehindIt) {
  // a's nominal is 4 GPUs. Job 1 (held, first in line) would take them all; counted, it
  // would make job 2 a borrower and put it behind b's job 3.
  ClusterView v = OneNode(8);
  v.pending = {MakeJob(1, "a", "training", {.gpus = 4, .submitted = 0}),
               MakeJob(2, "a", "training", {.gpus = 4, .submitted = 1}),
               MakeJob(3, "b", "training", {.gpus = 4, .submitted = 2})};
  v.pending[0].held = "held by alice: waiting for the dataset";
  Decisions d = Plan(v, TwoTenants(4, 4, 4), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kHeld);
  EXPECT_EQ(OutcomeOf(d, 1).reason, "held by alice: waiting for the dataset");
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  ASSERT_EQ(d.outcomes.size(), 3u);
  EXPECT_EQ(d.outcomes[0].job, 1u) << "it keeps its place in line";
  EXPECT_EQ(d.outcomes[1].job, 2u) << "job 2 stays within a's nominal";
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
  EXPECT_EQ(OutcomeOf(d, 3).outcome, Outcome::kPlaced);

  v.pending[0].held.clear();  // released: it starts first, and job 2 borrows
  d = Plan(v, TwoTenants(4, 4, 4), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
  EXPECT_EQ(d.outcomes[1].job, 3u);
}

TEST(UsageLedger, HalvesEveryHalfLifeAndAccruesExactly) {
  UsageLedger ledger(/*half_life_ms=*/3'600'000, /*start=*/0);
  ledger.Advance(3'600'000, {{"a", 2}});
  // 2 GPUs for one half-life: 2 · h/ln2 · (1 − 1/2) = h/ln2 GPU-seconds.
  EXPECT_NEAR(ledger.Usage("a"), 3600 / std::log(2.0), 1e-6);
  double before = ledger.Usage("a");
  ledger.Advance(7'200'000, {});
  EXPECT_NEAR(ledger.Usage("a"), before / 2, 1e-6);
  // Many short steps add up to the same as one long one.
  UsageLedger fine(3'600'000, 0);
  for (Time t = 60'000; t <= 3'600'000; t += 60'000) fine.Advance(t, {{"a", 2}});
  EXPECT_NEAR(fine.Usage("a"), 3600 / std::log(2.0), 1e-6);
}

}  // namespace
}  // namespace baton::sched
