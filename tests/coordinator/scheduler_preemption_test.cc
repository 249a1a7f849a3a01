// Scheduler preemption rules, one test each: strictly lower classes only, least lost
// work, fewest victims, minimum runtime, inference never evicted, freed room held for
// the preemptor across passes, cooldowns carried by evictions; and Explain reading the
// same pass.
#include "coordinator/scheduler/explain.h"
#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"

namespace baton::sched {
namespace {

using testing::MakeGang;
using testing::MakeJob;
using testing::MakeNode;
using testing::NodesOf;
using testing::NodeSpec;
using testing::OutcomeOf;
using testing::PlacementOf;
using testing::TestPolicy;
using testing::Victims;

using testing::kNow;
const std::vector<uint32_t> kAll = {0, 1, 2, 3, 4, 5, 6, 7};

TEST(SchedulerPreemption, EvictsOnlyStrictlyLowerClasses) {
  // A full node of training. Another training job may not evict it; a labeling job does.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, kAll, 0)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_TRUE(d.evictions.empty());

  v.pending = {MakeJob(1, "b", "labeling", {.gpus = 8})};
  d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(Victims(d), std::vector<JobId>{10});
  EXPECT_EQ(d.evictions[0].reason, EvictionReason::kHigherClass);
  EXPECT_NE(d.evictions[0].message.find("labeling"), std::string::npos);
}

TEST(SchedulerPreemption, EvictsTheLeastLostWorkFirst) {
  // Two full nodes of experiments: 10 checkpointed 100 s ago, 11 1000 s ago. Evicting 10
  // throws away 800 GPU-seconds, 11 8000: 10 goes.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, kAll, 0, kNow - 100'000),
               MakeGang(11, "a", "experiment", v, {"n2"}, kAll, 0, kNow - 1'000'000)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(Victims(d), std::vector<JobId>{10});
  EXPECT_DOUBLE_EQ(d.evictions[0].lost_gpu_seconds, 800);
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].kind, Reservation::Kind::kPreemption);
  EXPECT_EQ(d.reservations[0].nodes, std::vector<uint32_t>{0});
}

TEST(SchedulerPreemption, FewestVictimsBreakATieInLostWork) {
  // n1: two 4-GPU experiments, 100 s since their checkpoints (400 + 400 GPU-seconds);
  // n2: one 8-GPU experiment, 100 s (800). Equal loss: the single victim wins.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, {0, 1, 2, 3}, 0, kNow - 100'000),
               MakeGang(11, "a", "experiment", v, {"n1"}, {4, 5, 6, 7}, 0, kNow - 100'000),
               MakeGang(12, "a", "experiment", v, {"n2"}, kAll, 0, kNow - 100'000)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(Victims(d), std::vector<JobId>{12});
}

TEST(SchedulerPreemption, VictimsOnlyAsManyAsNeeded) {
  // Four 2-GPU experiments on one node; a 4-GPU job evicts the two with least lost work
  // (checkpointed most recently), and no more.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, {0, 1}, 0, kNow - 500'000),
               MakeGang(11, "a", "experiment", v, {"n1"}, {2, 3}, 0, kNow - 10'000),
               MakeGang(12, "a", "experiment", v, {"n1"}, {4, 5}, 0, kNow - 20'000),
               MakeGang(13, "a", "experiment", v, {"n1"}, {6, 7}, 0, kNow - 900'000)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 4, .ranks = 2})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(Victims(d), (std::vector<JobId>{11, 12}));
}

TEST(SchedulerPreemption, MinimumRuntimeProtectsAJustStartedVictim) {
  // The only possible victim started 30 s ago; the class minimum runtime is 60 s.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, kAll, kNow - 30'000)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_TRUE(d.evictions.empty());
  // After the minimum runtime it may go.
  d = Plan(v, TestPolicy(), kNow + 30'000);
  EXPECT_EQ(Victims(d), std::vector<JobId>{10});
}

TEST(SchedulerPreemption, InferenceIsNeverEvicted) {
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "s", "inference", v, {"n1"}, kAll, 0)};
  v.pending = {MakeJob(1, "s", "inference-critical", {.gpus = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
}

TEST(SchedulerPreemption, EvictionCarriesTheDoubledCooldown) {
  // The victim was evicted twice before: this third eviction costs it 30 s · 2² = 120 s.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  RunningGang g = MakeGang(10, "a", "experiment", v, {"n1"}, kAll, 0);
  g.evictions = 2;
  v.running = {g};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(d.evictions.size(), 1u);
  EXPECT_EQ(d.evictions[0].cooldown_ms, 120'000);
}

TEST(SchedulerPreemption, FreedRoomIsHeldForThePreemptorUntilItStarts) {
  // Pass 1: labeling job 1 evicts experiment 10. Training job 2 finds no other victim
  // (10 is already leaving) and does not evict twice.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, kAll, 0)};
  v.pending = {MakeJob(1, "b", "labeling", {.gpus = 8}), MakeJob(2, "b", "training", {.gpus = 8})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(Victims(d), std::vector<JobId>{10});
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].job, 1u);

  // Pass 2: 10 is still checkpointing. Job 1 waits for it and evicts nobody else; a new
  // labeling job 3 with a better fair share (first in line) may not take the held room.
  v.running[0].evicting = true;
  v.running[0].evicting_for = 1;
  v.pending[0].reserved_nodes = {"n1"};
  v.pending.push_back(MakeJob(3, "c", "labeling", {.gpus = 8, .submitted = -1}));
  d = Plan(v, TestPolicy(), kNow + 1000);
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kReserved);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("to exit"), std::string::npos);

  // Pass 3: 10 has exited. Job 1 starts in its room although job 3 is ahead of it.
  v.running.clear();
  d = Plan(v, TestPolicy(), kNow + 2000);
  EXPECT_EQ(d.outcomes[0].job, 3u);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
  EXPECT_EQ(PlacementOf(d, 3), nullptr);
}

TEST(SchedulerPreemption, HeldRoomGoesBackWhenItsJobCannotUseIt) {
  // Labeling job 1 held node n1 from the last pass, but its tenant now runs 4 GPUs
  // elsewhere and may not go past its nominal 8: it waits for quota, and training job 2
  // may use n1 after all.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "training", v, {"n2"}, {0, 1, 2, 3}, 0)};
  PendingJob held = MakeJob(1, "a", "labeling", {.gpus = 8});
  held.reserved_nodes = {"n1"};
  v.pending = {held, MakeJob(2, "b", "training", {.gpus = 8})};
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("a", 1, /*nominal_gpus=*/8, /*lending_gpus=*/0,
                               /*borrowing_gpus=*/0)};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kWaitForQuota);
  ASSERT_NE(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 2)), std::vector<std::string>{"n1"});
}

TEST(SchedulerPreemption, SearchesPerPassAreBounded) {
  // Three labeling jobs could each evict an experiment; with a budget of two searches
  // the third waits for the next pass and says so.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2"), MakeNode("n3")};
  for (JobId id = 10; id < 13; ++id) {
    v.running.push_back(
        MakeGang(id, "a", "experiment", v, {"n" + std::to_string(id - 9)}, kAll, 0));
  }
  v.pending = {MakeJob(1, "b", "labeling", {.gpus = 8, .submitted = 1}),
               MakeJob(2, "b", "labeling", {.gpus = 8, .submitted = 2}),
               MakeJob(3, "b", "labeling", {.gpus = 8, .submitted = 3})};
  Policy p = TestPolicy();
  p.preemption_searches_per_pass = 2;
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(d.evictions.size(), 2u);
  EXPECT_NE(OutcomeOf(d, 3).reason.find("deferred"), std::string::npos);
}

TEST(SchedulerExplain, NamesTheVictimsTheNextPassEvicts) {
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "experiment", v, {"n1"}, kAll, 0, kNow - 100'000),
               MakeGang(11, "a", "experiment", v, {"n2"}, kAll, 0, kNow - 1'000'000)};
  v.pending = {MakeJob(1, "b", "training", {.gpus = 8})};
  Explanation e = Explain(v, TestPolicy(), kNow, 1);
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_EQ(e.evictions.size(), d.evictions.size());
  EXPECT_EQ(e.evictions[0].victim, d.evictions[0].victim);
  EXPECT_EQ(e.outcome, Outcome::kReserved);
  std::string text = e.Text(v);
  EXPECT_NE(text.find("evicts job 10"), std::string::npos) << text;
  EXPECT_NE(text.find("holds node(s): n1"), std::string::npos) << text;
}

TEST(SchedulerExplain, SaysWhyAndWhereInLine) {
  // One busy node; three training jobs wait (the first holds the head reservation).
  // The third is 3rd in line with 2 of its class ahead, waiting for capacity.
  ClusterView v;
  v.nodes = {MakeNode("n1", NodeSpec{.gpus = 1, .numa = 1})};
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, {0}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.submitted = 1}),
               MakeJob(2, "a", "training", {.submitted = 2}),
               MakeJob(3, "a", "training", {.submitted = 3})};
  Explanation e = Explain(v, TestPolicy(), kNow, 3);
  EXPECT_TRUE(e.pending);
  EXPECT_EQ(e.position, 3u);
  EXPECT_EQ(e.queue_length, 3u);
  EXPECT_EQ(e.ahead_in_class, 2u);
  EXPECT_EQ(e.outcome, Outcome::kWaitForCapacity);
  EXPECT_NE(e.Text(v).find("3 of 3"), std::string::npos);
  EXPECT_FALSE(Explain(v, TestPolicy(), kNow, 10).pending);
  EXPECT_EQ(Explain(v, TestPolicy(), kNow, 10).Text(v), "job 10 is running");
}

TEST(SchedulerShares, ReportWeightUsageAndGpus) {
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  Policy p = TestPolicy();
  p.tenants = {testing::Tenant("a", 1, 4), testing::Tenant("b", 3, 4)};
  v.usage = {{"a", 300}, {"b", 100}};
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, {0, 1}, 0)};
  v.pending = {MakeJob(1, "b", "training", {.nodes = 2, .gpus = 4})};
  std::vector<TenantShare> s = Shares(v, p);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tenant, "a");
  EXPECT_DOUBLE_EQ(s[0].usage_share, 0.75);
  EXPECT_DOUBLE_EQ(s[1].weight_share, 0.75);
  EXPECT_EQ(s[0].running_gpus, 2u);
  EXPECT_EQ(s[1].pending_gpus, 8u);
}

}  // namespace
}  // namespace baton::sched
