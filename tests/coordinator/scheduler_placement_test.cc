// Scheduler placement rules, one test each: pools, taints and selectors; whole gangs;
// NUMA alignment; MIG slices (inference only); training apart from inference; exclusive cores for
// inference; best fit; the head-of-line reservation and backfill around it.
#include <set>

#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"

namespace baton::sched {
namespace {

using testing::MakeGang;
using testing::MakeJob;
using testing::MakeMigNode;
using testing::MakeNode;
using testing::NodesOf;
using testing::NodeSpec;
using testing::OutcomeOf;
using testing::PlacementOf;
using testing::TestPolicy;
using testing::Victims;

using testing::kNow;

TEST(SchedulerPlacement, PoolsTaintsAndSelectorsFilterNodes) {
  // The inference pool is tainted; the default pool has zones a and b.
  ClusterView v;
  Taint dedicated{"dedicated", "inference", "NoSchedule"};
  v.nodes = {MakeNode("inf-1", NodeSpec{.pool = "inference", .taints = {dedicated}}),
             MakeNode("gen-a", NodeSpec{.labels = {{"zone", "a"}}}),
             MakeNode("gen-b", NodeSpec{.labels = {{"zone", "b"}}})};
  Toleration tolerate{"dedicated", "inference", "NoSchedule", false};
  v.pending = {
      // A selector picks zone b.
      MakeJob(1, "a", "training", {.selector = {{"zone", "b"}}}),
      // The inference pool without the toleration: no node can ever take it.
      MakeJob(2, "a", "inference", {.pool = "inference"}),
      // With it: the tainted node.
      MakeJob(3, "a", "inference", {.pool = "inference", .tolerations = {tolerate}}),
  };
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 1)), std::vector<std::string>{"gen-b"});
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 2).reason.find("0 such node"), std::string::npos);
  ASSERT_NE(PlacementOf(d, 3), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 3)), std::vector<std::string>{"inf-1"});
}

TEST(SchedulerPlacement, GangIsAllOrNothing) {
  // Two nodes, one half busy. A 2-node × 8-GPU experiment gang cannot start on one node
  // and a half: nothing is placed. A 3-node gang can never run on two nodes.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "training", v, {"n2"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "a", "experiment", {.nodes = 2, .gpus = 8}),
               MakeJob(2, "a", "experiment", {.nodes = 3, .gpus = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  EXPECT_NE(OutcomeOf(d, 1).outcome, Outcome::kPlaced);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kInfeasible);
  EXPECT_TRUE(d.placements.empty());
}

TEST(SchedulerPlacement, EachRankOnOneNumaNode) {
  // 2 ranks × 4 GPUs on a node with 4 GPUs per NUMA node: each rank gets one NUMA node's
  // four GPUs, and they differ.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 8, .ranks = 2})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->nodes[0].ranks.size(), 2u);
  std::set<int32_t> numa;
  for (const RankBinding& r : p->nodes[0].ranks) {
    ASSERT_EQ(r.gpus.size(), 4u);
    for (uint32_t g : r.gpus) EXPECT_EQ(v.nodes[0].gpus[g].numa, r.numa);
    numa.insert(r.numa);
  }
  EXPECT_EQ(numa, (std::set<int32_t>{0, 1}));
}

TEST(SchedulerPlacement, RankWaitsForAlignedRoomRatherThanSpanNumaNodes) {
  // n1 has 2 free GPUs on each NUMA node; n2 has 4 free on NUMA node 1. A 1-rank 4-GPU job
  // could span n1's NUMA nodes, but the hardware aligns it, so it goes to n2.
  ClusterView v;
  v.nodes = {MakeNode("n1"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, {0, 1, 4, 5}, 0),
               MakeGang(11, "a", "training", v, {"n2"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 4, .ranks = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(NodesOf(v, *p), std::vector<std::string>{"n2"});
  EXPECT_EQ(p->nodes[0].ranks[0].numa, 1);
}

TEST(SchedulerPlacement, RankSpansNumaNodesOnlyWhenTheHardwareCannotAlignIt) {
  // One rank with 8 GPUs on a node of 2 × 4: no NUMA node could ever hold it, so it spans.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 8, .ranks = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->nodes[0].ranks[0].numa, -1);
  EXPECT_EQ(p->nodes[0].gpus.size(), 8u);
}

TEST(SchedulerPlacement, MigSlicesOnlyForJobsAskingThemOneRankPerSlice) {
  // A node of MIG slices and a node of whole GPUs. The whole-GPU job never gets slices;
  // the inference MIG job gets three slices, one per rank; MIG with mpi is refused, as is
  // a MIG job with fewer ranks than slices.
  ClusterView v;
  v.nodes = {MakeMigNode("mig", /*physical=*/2, /*slices=*/4),
             MakeNode("whole", NodeSpec{.gpus = 1, .numa = 1})};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 1}),
               MakeJob(2, "a", "inference", {.gpus = 3, .mig = "1g.18gb"}),
               MakeJob(3, "a", "inference", {.gpus = 2, .mig = "1g.18gb", .mpi = true}),
               MakeJob(4, "a", "inference", {.gpus = 2, .ranks = 1, .mig = "1g.18gb"})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 1)), std::vector<std::string>{"whole"});
  const Placement* mig = PlacementOf(d, 2);
  ASSERT_NE(mig, nullptr);
  ASSERT_EQ(mig->nodes[0].ranks.size(), 3u);
  for (const RankBinding& r : mig->nodes[0].ranks) {
    ASSERT_EQ(r.gpus.size(), 1u);
    EXPECT_EQ(v.nodes[0].gpus[r.gpus[0]].mig_profile, "1g.18gb");
  }
  EXPECT_EQ(OutcomeOf(d, 3).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 3).reason.find("mpi"), std::string::npos);
  EXPECT_EQ(OutcomeOf(d, 4).outcome, Outcome::kInfeasible);
}

TEST(SchedulerPlacement, TrainingNeverRunsOnAMigSliceInEitherMode) {
  // Free slices and nothing else: training asking for them is infeasible, direct mode
  // and mpi alike, and the reason names MIG; the same ask from inference is placed.
  ClusterView v;
  v.nodes = {MakeMigNode("mig", /*physical=*/2, /*slices=*/2)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 2, .mig = "1g.18gb"}),
               MakeJob(2, "a", "training", {.gpus = 1, .mig = "1g.18gb", .mpi = true}),
               MakeJob(3, "a", "inference", {.gpus = 2, .mig = "1g.18gb"})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  for (JobId id : {1, 2}) {
    EXPECT_EQ(OutcomeOf(d, id).outcome, Outcome::kInfeasible) << "job " << id;
    EXPECT_NE(OutcomeOf(d, id).reason.find("never runs on a MIG slice"), std::string::npos)
        << OutcomeOf(d, id).reason;
  }
  EXPECT_NE(PlacementOf(d, 3), nullptr);
}

TEST(SchedulerPlacement, AGpuShareWaitsForAnMpsPoolAndNeverTakesAWholeGpu) {
  // Free whole GPUs and no GPU offered as an MPS pool (agents offer none yet): the share
  // waits, saying for what, and the whole-GPU ask beside it is placed.
  Policy policy = TestPolicy();
  for (auto& c : policy.classes) {
    if (c.name == "inference") c.gpu_sharing = "mps";
  }
  ClusterView v;
  v.nodes = {MakeNode("whole", NodeSpec{.gpus = 2, .numa = 1})};
  v.pending = {MakeJob(1, "a", "inference", {.gpus = 1}), MakeJob(2, "a", "inference", {.gpus = 1}),
               MakeJob(3, "a", "training", {.gpus = 1})};
  v.pending[0].request.gpu_share_percent = 25;
  v.pending[0].request.gpu_memory_bytes = 20ull << 30;
  v.pending[2].request.gpu_share_percent = 25;  // a class that may not share
  v.pending[2].request.gpu_memory_bytes = 20ull << 30;
  Decisions d = Plan(v, policy, kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("a 25% share with 20Gi of a GPU offered as an MPS pool"),
            std::string::npos)
      << OutcomeOf(d, 1).reason;
  EXPECT_NE(PlacementOf(d, 2), nullptr) << "the whole GPU stays for whole-GPU asks";
  EXPECT_EQ(OutcomeOf(d, 3).outcome, Outcome::kInfeasible);
  EXPECT_NE(OutcomeOf(d, 3).reason.find("class training may not share a GPU"), std::string::npos)
      << OutcomeOf(d, 3).reason;
}

TEST(SchedulerPlacement, TrainingAvoidsTheNumaNodeInferenceUses) {
  // Inference holds GPU 0 on NUMA node 0. Best fit alone would put a 1-GPU training job
  // on NUMA node 0 (3 free GPUs there against 4); it goes to NUMA node 1 instead.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "s", "inference", v, {"n1"}, {0}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->nodes[0].ranks[0].numa, 1);
}

TEST(SchedulerPlacement, InferenceNumaExclusiveMakesTrainingWaitAndSaysWhy) {
  // Inference holds GPU 0 (NUMA node 0) and training all of NUMA node 1. A 1-GPU training
  // job would take NUMA node 0's free GPUs; with inference_numa_exclusive it waits, and
  // its reason names the rule. A 5-GPU single rank cannot align: it would span both NUMA
  // nodes, which the rule forbids too.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "s", "inference", v, {"n1"}, {0}, 0),
               MakeGang(11, "a", "training", v, {"n1"}, {4, 5, 6, 7}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 1})};
  Policy policy = TestPolicy();
  Decisions d = Plan(v, policy, kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr) << "off: a preference only";
  EXPECT_EQ(PlacementOf(d, 1)->nodes[0].ranks[0].numa, 0);

  policy.inference_numa_exclusive = true;
  d = Plan(v, policy, kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("policy inference_numa_exclusive"), std::string::npos)
      << OutcomeOf(d, 1).reason;

  v.running.pop_back();  // NUMA node 1 free again: the job goes there
  d = Plan(v, policy, kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(PlacementOf(d, 1)->nodes[0].ranks[0].numa, 1);

  v.pending = {MakeJob(2, "a", "training", {.gpus = 5, .ranks = 1})};
  policy.inference_numa_exclusive = false;
  d = Plan(v, policy, kNow);
  ASSERT_NE(PlacementOf(d, 2), nullptr) << "off: spans both NUMA nodes";
  policy.inference_numa_exclusive = true;
  d = Plan(v, policy, kNow);
  EXPECT_EQ(PlacementOf(d, 2), nullptr);
}

TEST(SchedulerPlacement, InferenceNumaExclusiveKeepsInferenceOffTrainingsNumaNodes) {
  // Training on both NUMA nodes (GPU 0 and GPU 4), six GPUs free. Off, inference is
  // placed beside it; on, it evicts one training gang rather than share a NUMA node.
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.running = {MakeGang(10, "a", "training", v, {"n1"}, {0}, 0),
               MakeGang(11, "a", "training", v, {"n1"}, {4}, 0)};
  v.pending = {MakeJob(1, "s", "inference", {.gpus = 1})};
  Policy policy = TestPolicy();
  Decisions d = Plan(v, policy, kNow);
  EXPECT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_TRUE(Victims(d).empty());

  policy.inference_numa_exclusive = true;
  d = Plan(v, policy, kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  ASSERT_EQ(Victims(d).size(), 1u);
}

TEST(SchedulerPlacement, InferenceRanksGetExclusiveCoresOfTheirNumaNode) {
  ClusterView v;
  v.nodes = {MakeNode("n1")};
  v.pending = {MakeJob(1, "s", "inference", {.gpus = 1}),
               MakeJob(2, "s", "inference", {.gpus = 1})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  std::set<uint32_t> cores;
  for (JobId id : {1, 2}) {
    const Placement* p = PlacementOf(d, id);
    ASSERT_NE(p, nullptr);
    const RankBinding& r = p->nodes[0].ranks[0];
    ASSERT_EQ(r.cpus.size(), 4u);  // 4 CPUs per GPU in the fixtures
    const auto& numa_cpus = v.nodes[0].numa[r.numa].cpus;
    for (uint32_t c : r.cpus) {
      EXPECT_TRUE(cores.insert(c).second) << "core " << c << " given twice";
      EXPECT_NE(std::find(numa_cpus.begin(), numa_cpus.end(), c), numa_cpus.end());
      // From the top of the NUMA node down: its first CPUs carry the system's own work.
      EXPECT_GE(c, numa_cpus[numa_cpus.size() - 8]) << "not among the node's highest CPUs";
    }
  }
}

// On an SMT node an inference rank holds whole cores: a job asking for 1 CPU gets both
// siblings of one core (training on the other would share its caches and pipelines).
TEST(SchedulerPlacement, OnAnSmtNodeInferenceHoldsWholeCores) {
  ClusterView v;
  v.nodes = {MakeNode("n1", {.cores = 64, .smt = 2})};  // core c: CPUs c and c + 32
  v.pending = {MakeJob(1, "s", "inference", {.gpus = 1, .cpu = 1000}),
               MakeJob(2, "s", "inference", {.gpus = 1, .cpu = 3000})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  std::set<uint32_t> held;
  for (auto [id, cpus] : {std::pair<JobId, size_t>{1, 2}, {2, 4}}) {
    const Placement* p = PlacementOf(d, id);
    ASSERT_NE(p, nullptr) << "job " << id;
    const RankBinding& r = p->nodes[0].ranks[0];
    ASSERT_EQ(r.cpus.size(), cpus) << "job " << id << ": its CPUs as whole cores";
    std::set<uint32_t> mine(r.cpus.begin(), r.cpus.end());
    const auto& numa_cpus = v.nodes[0].numa[r.numa].cpus;
    for (uint32_t c : r.cpus) {
      EXPECT_TRUE(mine.count(c < 32 ? c + 32 : c - 32)) << "CPU " << c << " without its sibling";
      EXPECT_TRUE(held.insert(c).second) << "CPU " << c << " given twice";
      EXPECT_NE(std::find(numa_cpus.begin(), numa_cpus.end(), c), numa_cpus.end());
    }
  }
}

// Ranks sharing one group of CPUs (two ranks, one GPU: an uneven group) split it core by
// core: no rank holds half of a core whose other half another rank holds.
TEST(SchedulerPlacement, OnAnSmtNodeRanksSplitTheirGroupCoreByCore) {
  ClusterView v;
  v.nodes = {MakeNode("n1", {.gpus = 1, .numa = 1, .cores = 16, .smt = 2})};  // c, c + 8
  v.pending = {MakeJob(1, "s", "inference", {.gpus = 1, .ranks = 2, .cpu = 4000})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->nodes[0].ranks.size(), 2u);
  for (const RankBinding& r : p->nodes[0].ranks) {
    ASSERT_EQ(r.cpus.size(), 2u) << "each rank: half the group";
    std::set<uint32_t> mine(r.cpus.begin(), r.cpus.end());
    for (uint32_t c : r.cpus) {
      EXPECT_TRUE(mine.count(c < 8 ? c + 8 : c - 8)) << "CPU " << c << " without its sibling";
    }
  }
}

TEST(SchedulerPlacement, OnAnSmtNodeInferenceFillsItCoreByCore) {
  // 4 CPUs: 2 cores of 2 on an SMT node, 4 cores without SMT. Three 1-CPU inference jobs.
  for (uint32_t smt : {2u, 1u}) {
    ClusterView v;
    v.nodes = {MakeNode("n1", {.gpus = 0, .numa = 1, .cores = 4, .smt = smt})};
    v.pending = {MakeJob(1, "s", "inference", {.gpus = 0, .cpu = 1000, .submitted = 0}),
                 MakeJob(2, "s", "inference", {.gpus = 0, .cpu = 1000, .submitted = 1}),
                 MakeJob(3, "s", "inference", {.gpus = 0, .cpu = 1000, .submitted = 2})};
    Decisions d = Plan(v, TestPolicy(), kNow);
    ASSERT_NE(PlacementOf(d, 1), nullptr) << "smt " << smt;
    ASSERT_NE(PlacementOf(d, 2), nullptr) << "smt " << smt;
    if (smt == 2) {
      EXPECT_EQ(PlacementOf(d, 3), nullptr) << "both cores are held whole";
      EXPECT_EQ(OutcomeOf(d, 3).outcome, Outcome::kReserved) << "it heads the line: it waits";
      std::vector<uint32_t> all = PlacementOf(d, 1)->nodes[0].ranks[0].cpus;
      for (uint32_t c : PlacementOf(d, 2)->nodes[0].ranks[0].cpus) all.push_back(c);
      std::sort(all.begin(), all.end());
      EXPECT_EQ(all, (std::vector<uint32_t>{0, 1, 2, 3}));
      v.pending = {MakeJob(4, "t", "training", {.gpus = 0, .cpu = 1000})};
      v.running = {};
      for (JobId id : {1, 2}) {
        RunningGang g;
        g.id = id;
        g.tenant = "s";
        g.priority_class = "inference";
        g.nodes = ToHeld(v, *PlacementOf(d, id));
        v.running.push_back(g);
      }
      EXPECT_EQ(PlacementOf(Plan(v, TestPolicy(), kNow), 4), nullptr)
          << "no training on the siblings of inference's cores, in the next pass either";
    } else {
      ASSERT_NE(PlacementOf(d, 3), nullptr) << "one CPU each";
      EXPECT_EQ(PlacementOf(d, 3)->nodes[0].ranks[0].cpus.size(), 1u);
    }
  }
}

TEST(SchedulerPlacement, BestFitTakesTheTightestNode) {
  // Free GPUs: n8 eight, n3 three, n2 two. A 2-GPU job goes to n2, keeping bigger holes.
  ClusterView v;
  v.nodes = {MakeNode("n8"), MakeNode("n3"), MakeNode("n2")};
  v.running = {MakeGang(10, "a", "training", v, {"n3"}, {0, 1, 2, 4, 5}, 0),
               MakeGang(11, "a", "training", v, {"n2"}, {0, 1, 2, 4, 5, 6}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 2})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 1)), std::vector<std::string>{"n2"});
}

TEST(SchedulerPlacement, HeadOfLineReservationWithBackfillAroundIt) {
  // A has 6 free GPUs, B 4. The 8-GPU head job (nothing it may evict) reserves A, the
  // node closest to fitting it. A 4-GPU job behind it backfills B; a 5-GPU job, which only
  // A could take, waits so that it cannot delay the head.
  ClusterView v;
  v.nodes = {MakeNode("A"), MakeNode("B")};
  v.running = {MakeGang(10, "a", "training", v, {"A"}, {0, 4}, 0),
               MakeGang(11, "a", "training", v, {"B"}, {0, 1, 4, 5}, 0)};
  v.pending = {MakeJob(1, "a", "training", {.gpus = 8, .submitted = 0}),
               MakeJob(2, "a", "training", {.gpus = 4, .submitted = 1}),
               MakeJob(3, "a", "training", {.gpus = 5, .submitted = 2})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kReserved);
  ASSERT_EQ(d.reservations.size(), 1u);
  EXPECT_EQ(d.reservations[0].kind, Reservation::Kind::kHeadOfLine);
  EXPECT_EQ(d.reservations[0].nodes, std::vector<uint32_t>{0});
  ASSERT_NE(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(NodesOf(v, *PlacementOf(d, 2)), std::vector<std::string>{"B"});
  EXPECT_EQ(PlacementOf(d, 3), nullptr);
  EXPECT_EQ(OutcomeOf(d, 3).outcome, Outcome::kWaitForCapacity);
}

TEST(SchedulerPlacement, OnlyAStrictlyHigherClassMayUseAReservedNode) {
  // Node A is held for training job 1: its preemption reservation from the last pass,
  // whose victims have left. Training job 3 of another tenant is first in line (older),
  // but a reservation binds every job of its class and below: job 3 may not take A, and
  // job 1 starts there. A labeling job, strictly higher, may take it.
  ClusterView v;
  v.nodes = {MakeNode("A", NodeSpec{.gpus = 1, .numa = 1})};
  PendingJob held = MakeJob(1, "a", "training", {.gpus = 1, .submitted = 5});
  held.reserved_nodes = {"A"};
  v.pending = {held, MakeJob(3, "b", "training", {.gpus = 1, .submitted = 0})};
  Decisions d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(d.outcomes[0].job, 3u);  // first in line: older
  EXPECT_EQ(PlacementOf(d, 3), nullptr);
  EXPECT_EQ(OutcomeOf(d, 1).outcome, Outcome::kPlaced);

  v.pending.push_back(MakeJob(2, "b", "labeling", {.gpus = 1}));
  d = Plan(v, TestPolicy(), kNow);
  EXPECT_EQ(OutcomeOf(d, 2).outcome, Outcome::kPlaced);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
}

}  // namespace
}  // namespace baton::sched
