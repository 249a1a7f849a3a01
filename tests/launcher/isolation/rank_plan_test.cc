// Each local rank's launch plan (CPUs, memory nodes, what it binds itself to) from the
// scheduler's bindings and the attempt's cpuset, on a fake 2-NUMA node; and the form a
// plan takes to mpirun's ranks (BATON_RANK_BINDINGS).
#include "launcher/agent/isolation/rank_plan.h"

#include "gtest/gtest.h"
#include "tests/launcher/isolation/fakes.h"

namespace baton {
namespace {

using Cpus = std::vector<uint32_t>;
using testing::RankOn;

// 2 NUMA nodes x 4 CPUs: 0-3 on node 0, 4-7 on node 1.
v1::Inventory TwoNuma() {
  v1::Inventory inv;
  inv.set_cpus(8);
  for (int n = 0; n < 2; ++n) {
    v1::NumaNode* node = inv.add_numa_nodes();
    node->set_id(n);
    for (uint32_t c = 4 * n; c < 4u * n + 4; ++c) node->add_cpus(c);
  }
  return inv;
}

TEST(RankPlan, EachRankRunsOnItsNumaNodesCpusWithItsMemoryBoundThere) {
  auto plans = PlanRanks(TwoNuma(), /*attempt_cpus=*/{0, 1, 2, 3, 4, 5, 6, 7},
                         /*attempt_mems=*/{0, 1}, {RankOn(0), RankOn(1)}, /*local_ranks=*/2);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].numa, 0);
  EXPECT_EQ(plans[0].cpus, (Cpus{0, 1, 2, 3}));
  EXPECT_EQ(plans[0].mems, (Cpus{0}));
  EXPECT_EQ(plans[0].bind, (ProcessBinding{{0, 1, 2, 3}, {0}}));
  EXPECT_EQ(plans[1].cpus, (Cpus{4, 5, 6, 7}));
  EXPECT_EQ(plans[1].mems, (Cpus{1}));
  EXPECT_EQ(plans[1].bind, (ProcessBinding{{4, 5, 6, 7}, {1}}));
}

TEST(RankPlan, ACpusetWithoutPartOfANodeLeavesTheRankTheRestButAsksForTheWholeNode) {
  // Inference holds 6-7: training's cpuset is 0-5. Rank 1 runs on 4-5; it asks the kernel
  // for all of node 1, so that the cpuset widening back gives it 6-7 again.
  auto plans = PlanRanks(TwoNuma(), {0, 1, 2, 3, 4, 5}, {0, 1}, {RankOn(0), RankOn(1)}, 2);
  EXPECT_EQ(plans[1].cpus, (Cpus{4, 5}));
  EXPECT_EQ(plans[1].mems, (Cpus{1}));
  EXPECT_EQ(plans[1].bind, (ProcessBinding{{4, 5, 6, 7}, {1}}));
}

TEST(RankPlan, ANodeTheCpusetDoesNotReachFallsBackToTheAttemptsCpusAndMemory) {
  auto plans = PlanRanks(TwoNuma(), {0, 1, 2}, {0}, {RankOn(1)}, 1);
  EXPECT_EQ(plans[0].numa, 1);
  EXPECT_EQ(plans[0].cpus, (Cpus{0, 1, 2}));
  EXPECT_EQ(plans[0].mems, (Cpus{0}));
  EXPECT_EQ(plans[0].bind, ProcessBinding{}) << "unbound: its cpuset decides";
}

TEST(RankPlan, ASpanningRankOrOneWithoutABindingGetsTheAttemptsCpusAndMemory) {
  auto plans = PlanRanks(TwoNuma(), {1, 2, 5, 6}, {0, 1}, {RankOn(-1)}, /*local_ranks=*/2);
  ASSERT_EQ(plans.size(), 2u);
  for (const RankPlan& p : plans) {
    EXPECT_EQ(p.numa, -1);
    EXPECT_EQ(p.cpus, (Cpus{1, 2, 5, 6}));
    EXPECT_EQ(p.mems, (Cpus{0, 1}));
    EXPECT_EQ(p.bind, ProcessBinding{});
  }
}

TEST(RankPlan, AnInferenceRankRunsOnExactlyItsChargedCpus) {
  auto plans = PlanRanks(TwoNuma(), {5, 6, 7}, {1}, {RankOn(1, {5}), RankOn(1, {6, 7})}, 2);
  EXPECT_EQ(plans[0].cpus, (Cpus{5}));
  EXPECT_EQ(plans[0].mems, (Cpus{1}));
  EXPECT_EQ(plans[0].bind, (ProcessBinding{{5}, {1}}));
  EXPECT_EQ(plans[1].cpus, (Cpus{6, 7}));
  EXPECT_EQ(plans[1].bind, (ProcessBinding{{6, 7}, {1}}));
}

TEST(RankPlan, ChargedCpusOutsideTheAttemptAreNotTakenItsNumaNodeIs) {
  // The agent picked other cores than the scheduler charged (a stale placement).
  auto plans = PlanRanks(TwoNuma(), {6, 7}, {1}, {RankOn(1, {4})}, 1);
  EXPECT_EQ(plans[0].cpus, (Cpus{6, 7}));
  EXPECT_EQ(plans[0].mems, (Cpus{1}));
}

TEST(RankPlan, WithoutACpusetTheWholeNodeIsTheAttempts) {
  auto plans = PlanRanks(TwoNuma(), {}, {}, {RankOn(1), RankOn(-1)}, 2);
  EXPECT_EQ(plans[0].cpus, (Cpus{4, 5, 6, 7}));
  EXPECT_EQ(plans[0].bind, (ProcessBinding{{4, 5, 6, 7}, {1}}));
  EXPECT_EQ(plans[1].cpus, (Cpus{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(plans[1].mems, (Cpus{0, 1}));
}

TEST(RankPlan, PlacementsAreReportedPerLocalRank) {
  v1::IsolationLimits limits;
  SetRankPlacements(PlanRanks(TwoNuma(), {0, 1, 2, 3, 4, 5}, {0, 1}, {RankOn(1), RankOn(-1)}, 2),
                    &limits);
  ASSERT_EQ(limits.ranks_size(), 2);
  EXPECT_EQ(limits.ranks(0).local_rank(), 0u);
  EXPECT_EQ(limits.ranks(0).numa(), 1);
  EXPECT_EQ(limits.ranks(0).cpus(), "4-5");
  EXPECT_EQ(limits.ranks(0).mems(), "1");
  EXPECT_EQ(limits.ranks(1).local_rank(), 1u);
  EXPECT_EQ(limits.ranks(1).cpus(), "0-5");
  EXPECT_EQ(limits.ranks(1).mems(), "0-1");
}

TEST(RankBindings, TravelToMpiRanksAsOneVariable) {
  std::vector<ProcessBinding> b = {{{0, 1, 2, 3}, {0}}, {}, {{6}, {1}}};
  std::string text = EncodeBindings(b);
  EXPECT_EQ(text, "0,1,2,3/0;/;6/1");
  for (uint32_t r = 0; r < 3; ++r) EXPECT_EQ(DecodeBinding(text, r), b[r]) << "local rank " << r;
  EXPECT_EQ(DecodeBinding(text, 3), std::nullopt);
  EXPECT_EQ(DecodeBinding("", 0), std::nullopt);
  EXPECT_EQ(DecodeBinding("0,x/0", 0), std::nullopt);
  EXPECT_EQ(DecodeBinding("0-3/0", 0), std::nullopt);
}

}  // namespace
}  // namespace baton
