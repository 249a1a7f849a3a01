// MPS shares in the pure scheduler: GPUs offered as pools (GpuInfo::mps) are counted as
// 100 compute units and their memory; a share goes to one pool, best fit, of one user at a
// time; training and whole-GPU asks never get a pool; quotas and fair share count a share
// as its fraction of a GPU; preemption frees what a share held. Random worlds keep the
// invariants (scheduler_invariants.cc).
#include <random>
#include <string>
#include <vector>

#include "coordinator/scheduler/fair_share.h"
#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"
#include "tests/coordinator/scheduler_invariants.h"

namespace baton::sched {
namespace {

using testing::MakeJob;
using testing::MakeNode;
using testing::NodeSpec;
using testing::OutcomeOf;
using testing::PlacementOf;
using testing::TestPolicy;
using testing::Victims;

// The test classes, with both inference classes allowed to share.
Policy SharingPolicy() {
  Policy p = TestPolicy();
  for (auto& c : p.classes) {
    if (c.service) c.gpu_sharing = "mps";
  }
  return p;
}

// A one-NUMA node of `gpus` GPUs with `memory` each; those in `pools` offered as MPS pools.
NodeInfo PoolNode(const std::string& name, uint32_t gpus, std::vector<uint32_t> pools,
                  uint64_t memory = 80 * testing::kGi) {
  NodeInfo n = MakeNode(name, NodeSpec{.gpus = gpus, .numa = 1});
  for (auto& g : n.gpus) g.memory_bytes = memory;
  for (uint32_t e : pools) n.gpus.at(e).mps = true;
  return n;
}

PendingJob Share(JobId id, const std::string& user, uint32_t percent, uint64_t memory,
                 const std::string& cls = "inference", const std::string& tenant = "a") {
  PendingJob j = MakeJob(id, tenant, cls, {.gpus = 1, .cpu = 1000, .memory = 4 * testing::kGi});
  j.user = user;
  j.request.gpu_share_percent = percent;
  j.request.gpu_memory_bytes = memory;
  return j;
}

// A running share of `percent` and `memory` of GPU entry `gpu` on `node`.
RunningGang RunningShare(JobId id, const std::string& user, const ClusterView& v,
                         const std::string& node, uint32_t gpu, uint32_t percent, uint64_t memory,
                         const std::string& cls = "inference") {
  RunningGang g = testing::MakeGang(id, "a", cls, v, {node}, {gpu}, testing::kNow - 3'600'000);
  g.user = user;
  g.nodes[0].cpu_millis = 1000;
  g.nodes[0].memory_bytes = 4 * testing::kGi;
  g.nodes[0].gpu_share_percent = percent;
  g.nodes[0].gpu_memory_bytes = memory;
  return g;
}

std::vector<uint32_t> GpusOf(const Decisions& d, JobId job) {
  const Placement* p = PlacementOf(d, job);
  return p ? p->nodes.at(0).gpus : std::vector<uint32_t>{};
}

TEST(SchedulerShares, SharesFillPoolsBestFitWithinUnitsAndMemory) {
  // Two 80Gi pools. 50% and 30% go to pool 0 (the 30% leaves 20 there, 70 on pool 1);
  // 40% no longer fits pool 0 and opens pool 1; 60% fills pool 1 exactly; 25% fits
  // nowhere (20 units on pool 0, none on pool 1) and waits.
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {0, 1})};
  v.pending = {Share(1, "alice", 50, 20 * testing::kGi), Share(2, "alice", 30, 20 * testing::kGi),
               Share(3, "alice", 40, 30 * testing::kGi), Share(4, "alice", 60, 10 * testing::kGi),
               Share(5, "alice", 25, 1 * testing::kGi)};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  EXPECT_EQ(GpusOf(d, 1), std::vector<uint32_t>{0});
  EXPECT_EQ(GpusOf(d, 2), std::vector<uint32_t>{0});
  EXPECT_EQ(GpusOf(d, 3), std::vector<uint32_t>{1});
  EXPECT_EQ(GpusOf(d, 4), std::vector<uint32_t>{1});
  EXPECT_EQ(PlacementOf(d, 5), nullptr);
  EXPECT_EQ(PlacementOf(d, 1)->nodes[0].gpu_share_percent, 50u);
  EXPECT_EQ(PlacementOf(d, 1)->nodes[0].gpu_memory_bytes, 20 * testing::kGi);
  EXPECT_TRUE(testing::CheckDecisions(v, SharingPolicy(), testing::kNow, d).empty());
}

TEST(SchedulerShares, MemoryBoundsAPoolAsUnitsDo) {
  ClusterView v;
  v.nodes = {PoolNode("p", 1, {0}, 40 * testing::kGi)};
  v.pending = {Share(1, "alice", 10, 30 * testing::kGi), Share(2, "alice", 10, 10 * testing::kGi),
               Share(3, "alice", 10, 1 * testing::kGi)};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  EXPECT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_NE(PlacementOf(d, 2), nullptr) << "30Gi + 10Gi fills the pool's 40Gi";
  EXPECT_EQ(PlacementOf(d, 3), nullptr) << "70 units are left, but no memory";
}

TEST(SchedulerShares, APoolHoldsSharesOfOneUserAtATime) {
  // alice holds 10% of pool 0: bob's share goes to pool 1 although pool 0 would be the
  // better fit; carol's finds both pools taken by other users and waits, saying why.
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {0, 1})};
  v.running = {RunningShare(10, "alice", v, "p", 0, 10, 8 * testing::kGi)};
  v.pending = {Share(1, "bob", 10, 8 * testing::kGi), Share(2, "alice", 10, 8 * testing::kGi),
               Share(3, "carol", 10, 8 * testing::kGi)};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  EXPECT_EQ(GpusOf(d, 1), std::vector<uint32_t>{1});
  EXPECT_EQ(GpusOf(d, 2), std::vector<uint32_t>{0}) << "alice's own pool takes her next share";
  EXPECT_EQ(PlacementOf(d, 3), nullptr);
  EXPECT_NE(OutcomeOf(d, 3).reason.find("one user at a time"), std::string::npos)
      << OutcomeOf(d, 3).reason;
}

TEST(SchedulerShares, APoolNeverGoesWholeAndAShareNeverTakesAWholeGpu) {
  // GPU 0 whole, GPU 1 a pool: one training job gets GPU 0, the second waits rather than
  // take the pool; a whole-GPU inference job waits too; the share takes the pool.
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {1})};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 1}), MakeJob(2, "a", "training", {.gpus = 1}),
               MakeJob(3, "a", "inference", {.gpus = 1}),
               Share(4, "alice", 100, 80 * testing::kGi)};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  std::vector<uint32_t> whole;
  for (JobId j : {1, 2, 3}) {
    for (uint32_t g : GpusOf(d, j)) whole.push_back(g);
  }
  EXPECT_EQ(whole, std::vector<uint32_t>{0}) << "only GPU 0 goes whole";
  EXPECT_EQ(GpusOf(d, 4), std::vector<uint32_t>{1});
  EXPECT_TRUE(testing::CheckDecisions(v, SharingPolicy(), testing::kNow, d).empty());
}

TEST(SchedulerShares, AQuotaCountsAShareAsItsFractionOfAGpu) {
  // Nominal 1 GPU, no borrowing: two 40% shares fit (0.8), a third would make 1.2.
  Policy p = SharingPolicy();
  p.tenants = {testing::Tenant("a", 1, 1, 1'000'000, 0)};
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {0, 1})};
  v.pending = {Share(1, "alice", 40, 8 * testing::kGi), Share(2, "alice", 40, 8 * testing::kGi),
               Share(3, "alice", 40, 8 * testing::kGi)};
  Decisions d = Plan(v, p, testing::kNow);
  EXPECT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_NE(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(PlacementOf(d, 3), nullptr);
  EXPECT_NE(OutcomeOf(d, 3).reason.find("uses 0.8 GPU(s)"), std::string::npos)
      << OutcomeOf(d, 3).reason;
}

TEST(SchedulerShares, FairShareChargesAShareItsFraction) {
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {0})};
  v.running = {RunningShare(10, "alice", v, "p", 0, 25, 8 * testing::kGi),
               testing::MakeGang(11, "b", "training", v, {"p"}, {1}, testing::kNow)};
  std::map<std::string, double> gpus = RunningGpusByTenant(v);
  EXPECT_DOUBLE_EQ(gpus["a"], 0.25);
  EXPECT_DOUBLE_EQ(gpus["b"], 1.0);
}

TEST(SchedulerShares, AShareIsNeverEvictedAndTrainingNeverEvictsForAPool) {
  // The pool is full of inference shares and the whole GPU runs training: a critical share
  // waits (services are never victims), and so does critical whole-GPU inference for the
  // pool; it takes the training job's whole GPU instead.
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {0})};
  v.running = {RunningShare(10, "alice", v, "p", 0, 80, 40 * testing::kGi),
               RunningShare(11, "alice", v, "p", 0, 20, 8 * testing::kGi),
               testing::MakeGang(12, "b", "training", v, {"p"}, {1}, 0)};
  v.pending = {MakeJob(1, "a", "inference-critical", {.gpus = 1}),
               Share(2, "alice", 50, 20 * testing::kGi, "inference-critical")};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  EXPECT_EQ(Victims(d), std::vector<JobId>{12});
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kReserved) << OutcomeOf(d, 1).reason;
  EXPECT_EQ(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kWaitForCapacity) << OutcomeOf(d, 2).reason;
}

TEST(SchedulerShares, ANodeWithNoPoolSaysTheShareNeedsOne) {
  ClusterView v;
  v.nodes = {PoolNode("p", 2, {})};
  v.pending = {Share(1, "alice", 25, 20 * testing::kGi)};
  Decisions d = Plan(v, SharingPolicy(), testing::kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("offered as an MPS pool"), std::string::npos);
}

// Random worlds of whole GPUs and pools, shares of three users in two sharing classes
// beside whole-GPU training and inference, some running from an earlier pass: every
// pass keeps the invariants (no pool over 100 units or its memory, one user per pool,
// shares only on pools, pools never whole).
TEST(SchedulerShares, RandomWorldsKeepEveryPoolWithinItsUnitsMemoryAndOneUser) {
  const Policy policy = SharingPolicy();
  const std::vector<std::string> classes = {"inference", "inference-critical", "training",
                                            "inference"};
  size_t shares_placed = 0;  // over every pass: the worlds do exercise pools
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::mt19937_64 rng(seed);
    auto draw = [&](uint64_t lo, uint64_t hi) {
      return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
    };
    ClusterView v;
    const uint64_t nodes = draw(1, 4);
    for (uint64_t i = 0; i < nodes; ++i) {
      const auto gpus = static_cast<uint32_t>(draw(1, 4));
      std::vector<uint32_t> pools;
      for (uint32_t e = 0; e < gpus; ++e) {
        if (draw(0, 1)) pools.push_back(e);
      }
      const uint64_t memory = draw(1, 2) * 40 * testing::kGi;
      v.nodes.push_back(PoolNode("n" + std::to_string(i), gpus, pools, memory));
    }
    auto job = [&](JobId id) {
      const std::string& cls = classes[draw(0, classes.size() - 1)];
      const std::string user = "u" + std::to_string(draw(0, 2));
      if (cls != "training" && draw(0, 3) != 0) {
        const auto percent = static_cast<uint32_t>(draw(1, 20) * 5);
        const uint64_t memory = draw(1, 40) * 2 * testing::kGi;
        return Share(id, user, percent, memory, cls, "t" + std::to_string(draw(0, 1)));
      }
      PendingJob j = MakeJob(id, "t" + std::to_string(draw(0, 1)), cls,
                             {.gpus = static_cast<uint32_t>(draw(0, 2))});
      j.user = user;
      return j;
    };
    const uint64_t seeded = draw(0, 12);
    for (JobId id = 1; id <= seeded; ++id) v.pending.push_back(job(id));
    Decisions first = Plan(v, policy, testing::kNow - 600'000);
    for (const Placement& pl : first.placements) {
      const PendingJob& j = *std::find_if(v.pending.begin(), v.pending.end(),
                                          [&](const PendingJob& x) { return x.id == pl.job; });
      RunningGang g;
      g.id = j.id;
      g.tenant = j.tenant;
      g.user = j.user;
      g.priority_class = j.priority_class;
      g.nodes = ToHeld(v, pl);
      g.started = testing::kNow - 600'000;
      v.running.push_back(std::move(g));
    }
    v.pending.clear();
    const uint64_t waiting = draw(1, 20);
    for (JobId id = 100; id < 100 + waiting; ++id) v.pending.push_back(job(id));
    Decisions d = Plan(v, policy, testing::kNow);
    std::vector<std::string> problems = testing::CheckDecisions(v, policy, testing::kNow, d);
    ASSERT_TRUE(problems.empty()) << "seed " << seed << ": " << problems.front() << "\n"
                                  << testing::DescribePass(v, d);
    for (const Placement& pl : d.placements) shares_placed += pl.nodes[0].gpu_share_percent > 0;
  }
  EXPECT_GT(shares_placed, 300u);
}

}  // namespace
}  // namespace baton::sched
