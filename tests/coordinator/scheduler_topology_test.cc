// Gangs placed by the switch tree (docs/topology.md): the pure domain choice from a
// table, then Plan on small trees (one leaf when one holds the gang, best fit keeping big
// leaves whole, required waiting and saying why, the wait that relaxes it, unlabelled
// nodes, class defaults, reservations and preemption by domain), then random trees.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "coordinator/scheduler/explain.h"
#include "coordinator/scheduler/plan.h"
#include "coordinator/scheduler/topology.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"

namespace baton::sched {
namespace {

using internal::kNone;
using internal::PickDomains;
using namespace testing;  // NOLINT: the scheduler tests' builders (scheduler_fixtures.h)

constexpr char kLeaf[] = "topology.baton.io/leaf";
constexpr char kSpine[] = "topology.baton.io/spine";
constexpr uint32_t N = kNone;

struct PickRow {
  const char* what;
  std::vector<std::vector<uint32_t>> domains;  // [level above the request's][candidate]
  uint32_t n;
  bool required;
  std::vector<uint32_t> want;
};

TEST(SchedulerTopology, PickDomainsTable) {
  const PickRow rows[] = {
      {"best fit: the smallest leaf that holds it", {{1, 1, 2, 2, 2}}, 2, true, {0, 1}},
      {"best fit, later in the list", {{1, 2, 2, 3, 3, 3}}, 3, false, {3, 4, 5}},
      {"required and no leaf holds it", {{1, 1, 2, 2}}, 3, true, {}},
      {"preferred: two leaves under the spine that holds it",
       {{1, 1, 2, 2, 3, 3, 3}, {7, 7, 7, 7, 8, 8, 8}},
       4,
       false,
       {0, 1, 2, 3}},
      {"the largest leaf, then the smallest that covers the rest",
       {{1, 1, 1, 2, 3, 3}, {7, 7, 7, 7, 7, 7}},
       4,
       false,
       {0, 1, 2, 3}},
      {"no spine holds it: the whole cluster, fewest leaves",
       {{1, 1, 2, 2, 3}, {7, 7, 8, 8, 9}},
       3,
       false,
       {0, 1, 4}},
      {"required never uses an unlabelled node", {{N, N, 1, 1}}, 2, true, {2, 3}},
      {"preferred takes unlabelled nodes as domains of their own", {{N, N, 1}}, 2, false, {0, 1}},
      {"a fuller spine that needs more leaves loses to one that needs fewer",
       {{1, 2, 3, 4, 4, 4}, {7, 7, 7, 8, 8, 8}},
       3,
       false,
       {3, 4, 5}},
  };
  for (const PickRow& row : rows) {
    EXPECT_EQ(PickDomains(row.domains, row.n, row.required), row.want) << row.what;
  }
}

Policy TreePolicy() {
  Policy p = TestPolicy();
  p.topology_levels = {{"leaf", kLeaf}, {"spine", kSpine}};
  return p;
}

// Nodes "<leaf>-n<k>" with the leaf's and spine's labels; a leaf "" gives unlabelled nodes.
void AddLeaf(ClusterView& v, const std::string& spine, const std::string& leaf, int nodes,
             const std::string& prefix = "") {
  for (int k = 1; k <= nodes; ++k) {
    NodeSpec spec;
    if (!leaf.empty()) spec.labels = {{kLeaf, leaf}, {kSpine, spine}};
    v.nodes.push_back(MakeNode((leaf.empty() ? prefix : leaf) + "-n" + std::to_string(k), spec));
  }
}

std::set<std::string> LeavesOf(const ClusterView& v, const Placement& p) {
  std::set<std::string> out;
  for (const NodePlacement& np : p.nodes) {
    auto it = v.nodes[np.node].labels.find(kLeaf);
    out.insert(it == v.nodes[np.node].labels.end() ? "(none)" : it->second);
  }
  return out;
}

TopologyRequest Leaf(bool required = false, int64_t wait_ms = 0) {
  return {"leaf", required, wait_ms};
}

TEST(SchedulerTopology, AGangLandsUnderOneLeafWhereBestFitWouldSpreadIt) {
  // Leaves a and b, two nodes each; a-n2 and b-n1 half busy. Best fit alone puts a
  // 2-node × 4-GPU gang on the two half-free nodes, one per leaf; asked for a leaf, it
  // lands in one.
  ClusterView v;
  AddLeaf(v, "s1", "a", 2);
  AddLeaf(v, "s1", "b", 2);
  v.running = {MakeGang(10, "x", "training", v, {"a-n2"}, {0, 1, 2, 3}, 0),
               MakeGang(11, "x", "training", v, {"b-n1"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 4}),
               MakeJob(2, "t", "training", {.nodes = 2, .gpus = 4, .topology = Leaf()})};
  ClusterView plain = v;
  plain.pending.pop_back();
  Decisions d0 = Plan(plain, TreePolicy(), kNow);
  ASSERT_NE(PlacementOf(d0, 1), nullptr);
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d0, 1)).size(), 2u) << "the world must tempt a spread";

  v.pending.erase(v.pending.begin());
  Decisions d = Plan(v, TreePolicy(), kNow);
  const Placement* p = PlacementOf(d, 2);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(LeavesOf(v, *p).size(), 1u);
  EXPECT_EQ(p->topology_domains.size(), 1u);
  EXPECT_EQ(p->topology_min_domains, 1u);
  EXPECT_NE(OutcomeOf(d, 2).reason.find("in 1 leaf(s): "), std::string::npos)
      << OutcomeOf(d, 2).reason;
}

TEST(SchedulerTopology, BestFitLeavesTheBigLeafForTheBigGang) {
  // Leaf big has four free nodes, leaf small two. The 2-node gang (first in line) takes
  // leaf small, so the 4-node required gang behind it still finds a whole leaf.
  ClusterView v;
  AddLeaf(v, "s1", "big", 4);
  AddLeaf(v, "s1", "small", 2);
  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 8, .topology = Leaf()}),
               MakeJob(2, "t", "training", {.nodes = 4, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  ASSERT_NE(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d, 1)), std::set<std::string>{"small"});
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d, 2)), std::set<std::string>{"big"});
}

TEST(SchedulerTopology, BestFitCountsWhatEarlierGangsOfThePassTook) {
  // Leaf x has two free nodes, leaf y five. The 4-node gang can only take y; after it, y
  // has one free node and is the best fit for the one-node required job behind it. The
  // per-leaf counts are kept as the pass places gangs: counts from the start of the pass
  // would still rank y (5) after x (2) and put the job in x.
  ClusterView v;
  AddLeaf(v, "s1", "x", 2);
  AddLeaf(v, "s1", "y", 5);
  v.pending = {MakeJob(1, "t", "training", {.nodes = 4, .gpus = 8, .topology = Leaf(true)}),
               MakeJob(2, "t", "training", {.nodes = 1, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr) << OutcomeOf(d, 1).reason;
  ASSERT_NE(PlacementOf(d, 2), nullptr) << OutcomeOf(d, 2).reason;
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d, 1)), std::set<std::string>{"y"});
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d, 2)), std::set<std::string>{"y"});
}

TEST(SchedulerTopology, APreferredSpreadUsesTheLeavesWhereMembersReallyFit) {
  // Leaf a has four nodes with their GPUs free, but three have too few CPUs for a
  // member: by free GPUs, a alone holds the 4-node gang; in truth only b and c together
  // do (two nodes each). The gang goes to b and c, and to no node of a that cannot hold it.
  ClusterView v;
  for (int k = 1; k <= 4; ++k) {
    NodeSpec spec;
    spec.labels = {{kLeaf, "a"}, {kSpine, "s1"}};
    if (k > 1) spec.cores = 8;  // a member asks for 32 CPUs
    v.nodes.push_back(MakeNode("a-n" + std::to_string(k), spec));
  }
  AddLeaf(v, "s1", "b", 2);
  AddLeaf(v, "s1", "c", 2);
  v.pending = {MakeJob(1, "t", "training", {.nodes = 4, .gpus = 8, .topology = Leaf()})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  const Placement* p = PlacementOf(d, 1);
  ASSERT_NE(p, nullptr) << OutcomeOf(d, 1).reason;
  EXPECT_EQ(LeavesOf(v, *p), (std::set<std::string>{"b", "c"}));
  EXPECT_EQ(p->topology_domains.size(), 2u);
  EXPECT_EQ(p->topology_min_domains, 2u) << "a leaf holds at most two members";
}

TEST(SchedulerTopology, RequiredWaitsNamingTheLargestFreeLeafUntilItsWaitRunsOut) {
  // Leaves of three nodes, one busy in each: no leaf has three free. The required gang
  // waits and says where the most room is; once it has waited its 5 s it runs spread, as
  // few leaves as it can, under one spine.
  ClusterView v;
  AddLeaf(v, "s1", "a", 3);
  AddLeaf(v, "s1", "b", 3);
  v.running = {MakeGang(10, "x", "training", v, {"a-n1"}, {0, 1, 2, 3, 4, 5, 6, 7}, 0),
               MakeGang(11, "x", "training", v, {"b-n1"}, {0, 1, 2, 3, 4, 5, 6, 7}, 0)};
  testing::JobSpec spec{
      .nodes = 3, .gpus = 8, .submitted = kNow - 2000, .topology = Leaf(true, 5000)};
  v.pending = {MakeJob(1, "t", "experiment", spec)};
  Decisions d = Plan(v, TreePolicy(), kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  const std::string& why = OutcomeOf(d, 1).reason;
  // It heads the line: a leaf is held for it (training there may not be evicted by it).
  EXPECT_NE(why.find("it needs one leaf (a is held); largest free: 2 node(s) in a"),
            std::string::npos)
      << why;
  // Behind a job that heads the line, it waits for capacity and says what for.
  v.pending.insert(v.pending.begin(),
                   MakeJob(2, "t", "training", {.nodes = 6, .gpus = 8, .submitted = 1}));
  d = Plan(v, TreePolicy(), kNow);
  EXPECT_NE(OutcomeOf(d, 1).reason.find("free under one leaf; largest free: 2 node(s) in a"),
            std::string::npos)
      << OutcomeOf(d, 1).reason;
  v.pending.erase(v.pending.begin());

  Decisions later = Plan(v, TreePolicy(), kNow + 3001);
  const Placement* p = PlacementOf(later, 1);
  ASSERT_NE(p, nullptr) << OutcomeOf(later, 1).reason;
  EXPECT_EQ(LeavesOf(v, *p).size(), 2u);
  EXPECT_EQ(p->topology_min_domains, 1u);
  EXPECT_NE(OutcomeOf(later, 1).reason.find("1 at best"), std::string::npos)
      << OutcomeOf(later, 1).reason;
}

TEST(SchedulerTopology, RequiredNeverUsesUnlabelledNodesAndPreferredDoes) {
  ClusterView v;
  AddLeaf(v, "", "", 2, "bare");
  AddLeaf(v, "s1", "a", 2);
  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 1), nullptr);
  EXPECT_EQ(LeavesOf(v, *PlacementOf(d, 1)), std::set<std::string>{"a"});

  // Leaf a busy: required waits, preferred runs on the unlabelled nodes.
  v.running = {MakeGang(10, "x", "training", v, {"a-n1", "a-n2"}, {0, 1, 2, 3, 4, 5, 6, 7}, 0)};
  d = Plan(v, TreePolicy(), kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr);
  v.pending = {MakeJob(2, "t", "training", {.nodes = 2, .gpus = 8, .topology = Leaf()})};
  d = Plan(v, TreePolicy(), kNow);
  ASSERT_NE(PlacementOf(d, 2), nullptr);
  EXPECT_EQ(PlacementOf(d, 2)->topology_domains,
            (std::vector<std::string>{"bare-n1 (no leaf)", "bare-n2 (no leaf)"}));
}

TEST(SchedulerTopology, AClassDefaultAppliesAndAnUnknownLevelIsRefused) {
  ClusterView v;
  AddLeaf(v, "s1", "a", 1);
  AddLeaf(v, "s1", "b", 1);
  Policy p = TreePolicy();
  for (PriorityClass& c : p.classes) {
    if (c.name == "training") c.topology = Leaf(true);
  }
  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 8}),
               MakeJob(2, "t", "experiment", {.nodes = 2, .gpus = 8})};
  Decisions d = Plan(v, p, kNow);
  EXPECT_EQ(PlacementOf(d, 1), nullptr) << "the class default keeps it in one leaf";
  EXPECT_NE(OutcomeOf(d, 1).reason.find("under one leaf"), std::string::npos);
  EXPECT_NE(PlacementOf(d, 2), nullptr);

  JobRequest r = testing::MakeRequest({.nodes = 2, .gpus = 8, .topology = {"rack", true, 0}});
  absl::Status s = CheckRequest(p, "t", "training", r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("topology level 'rack' is not one of the policy's topology.levels "
                             "(leaf, spine)"),
            std::string::npos)
      << s;
}

TEST(SchedulerTopology, TheHeadOfLineReservationHoldsOneLeaf) {
  // Each leaf has one node busy with work the waiting job may not evict, so the required
  // gang waits. Most free GPUs first would hold a-n2 and b-n2, one per leaf; it holds one
  // leaf.
  ClusterView v;
  AddLeaf(v, "s1", "a", 2);
  AddLeaf(v, "s1", "b", 2);
  v.running = {MakeGang(10, "x", "training", v, {"a-n1"}, {0, 1}, 0),
               MakeGang(11, "x", "training", v, {"b-n1"}, {0, 1, 2, 3}, 0)};
  v.pending = {MakeJob(1, "t", "experiment", {.nodes = 2, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  ASSERT_EQ(d.reservations.size(), 1u) << OutcomeOf(d, 1).reason;
  std::set<std::string> leaves;
  for (uint32_t n : d.reservations[0].nodes) leaves.insert(v.nodes[n].labels.at(kLeaf));
  EXPECT_EQ(leaves, std::set<std::string>{"a"}) << "the leaf with the most free GPUs";
}

TEST(SchedulerTopology, PreemptionFreesOneLeafRatherThanTheCheapestScatteredNodes) {
  // Every node runs an experiment gang. The cheapest two victims sit in different
  // leaves (a-n1, b-n1); a leaf-bound training gang evicts a whole leaf instead, the
  // cheaper one (a: 1 s + 10 s of lost work against b's 1 s + 20 s, per GPU).
  ClusterView v;
  AddLeaf(v, "s1", "a", 2);
  AddLeaf(v, "s1", "b", 2);
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  v.running = {MakeGang(10, "x", "experiment", v, {"a-n1"}, all, 0, kNow - 1000),
               MakeGang(11, "x", "experiment", v, {"a-n2"}, all, 0, kNow - 10000),
               MakeGang(12, "x", "experiment", v, {"b-n1"}, all, 0, kNow - 1000),
               MakeGang(13, "x", "experiment", v, {"b-n2"}, all, 0, kNow - 20000)};
  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 8})};
  Decisions plain = Plan(v, TreePolicy(), kNow);
  EXPECT_EQ(Victims(plain), (std::vector<JobId>{10, 12})) << "the world must tempt a spread";

  v.pending = {MakeJob(1, "t", "training", {.nodes = 2, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  EXPECT_EQ(Victims(d), (std::vector<JobId>{10, 11}));
  EXPECT_EQ(OutcomeOf(d, 1).reason,
            "evicting job(s) 10, 11 to make room; the room is held for it; it frees a");
}

// Random trees of whole-node jobs: each node is free or busy as a whole, so "fits" is
// "free". One pending gang a pass; every rule checked against a brute-force count.
TEST(SchedulerTopology, ExplainSaysWhatWouldFreeALeafForAJobThatMayEvictNobody) {
  // Every leaf is full. The experiment job may evict none of them (training is above it,
  // inference never), so the pass plans nothing; explain names the cheapest leaf to free:
  // a, whose one two-node gang started a minute ago, rather than b (two gangs, hours of
  // work) or c (inference services: never counted, though losing them costs nothing).
  ClusterView v;
  AddLeaf(v, "s1", "a", 2);
  AddLeaf(v, "s1", "b", 2);
  AddLeaf(v, "s1", "c", 2);
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  v.running = {MakeGang(10, "x", "training", v, {"a-n1", "a-n2"}, all, kNow - 60'000),
               MakeGang(11, "x", "training", v, {"b-n1"}, all, kNow - 7'200'000),
               MakeGang(12, "x", "training", v, {"b-n2"}, all, kNow - 7'200'000),
               MakeGang(13, "x", "inference-critical", v, {"c-n1"}, all, kNow),
               MakeGang(14, "x", "inference-critical", v, {"c-n2"}, all, kNow)};
  v.pending = {MakeJob(1, "t", "experiment", {.nodes = 2, .gpus = 8, .topology = Leaf(true)})};
  Decisions d = Plan(v, TreePolicy(), kNow);
  EXPECT_TRUE(d.evictions.empty());
  EXPECT_EQ(OutcomeOf(d, 1).reason.find("would free"), std::string::npos)
      << "the pass itself does not ask: " << OutcomeOf(d, 1).reason;
  Explanation e = Explain(v, TreePolicy(), kNow, 1);
  ASSERT_TRUE(e.reservation.has_value()) << "first in line, it holds a leaf";
  EXPECT_EQ(e.reservation->kind, Reservation::Kind::kHeadOfLine);
  EXPECT_NE(e.reason.find("; evicting 1 job(s) (10) would free a"), std::string::npos) << e.reason;
  EXPECT_TRUE(e.evictions.empty()) << "a question, not a plan";

  // Second in line, waiting for capacity, it says the same.
  v.pending[0].submitted = 1'000;
  v.pending.insert(v.pending.begin(), MakeJob(2, "t", "experiment", {.nodes = 2, .gpus = 8}));
  e = Explain(v, TreePolicy(), kNow, 1);
  EXPECT_EQ(e.outcome, Outcome::kWaitForCapacity) << e.reason;
  EXPECT_NE(e.reason.find("; evicting 1 job(s) (10) would free a"), std::string::npos) << e.reason;

  // Without the topology request there is no domain to name.
  v.pending[1].request.topology = {};
  EXPECT_EQ(Explain(v, TreePolicy(), kNow, 1).reason.find("would free"), std::string::npos);
}

TEST(SchedulerTopology, RandomTreesKeepTheRules) {
  std::mt19937_64 rng(7);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int spread_seen = 0, one_leaf_seen = 0, waited_seen = 0;
  for (int world = 0; world < 400; ++world) {
    ClusterView v;
    // leaf -> spine, nodes where a member fits, nodes with 8 GPUs free (some of them
    // without the CPUs a member needs: the leaf's free-GPU count overstates what fits)
    struct LeafFree {
      std::string spine;
      int fit = 0, gpus_free = 0;
    };
    std::map<std::string, LeafFree> leaf_free;
    int spines = draw(1, 3), next = 0;
    for (int s = 0; s < spines; ++s) {
      for (int l = 0, leaves = draw(1, 4); l < leaves; ++l) {
        std::string leaf = "s" + std::to_string(s) + "l" + std::to_string(l);
        AddLeaf(v, "s" + std::to_string(s), leaf, draw(1, 4));
        leaf_free[leaf] = {"s" + std::to_string(s)};
      }
    }
    AddLeaf(v, "", "", draw(0, 2), "bare");
    for (const NodeInfo& n : v.nodes) {
      auto it = n.labels.find(kLeaf);
      int roll = draw(0, 5);
      if (roll < 2) {
        v.running.push_back(MakeGang(1000 + next++, "x", "inference-critical", v, {n.name},
                                     {0, 1, 2, 3, 4, 5, 6, 7}, 0));
        continue;
      }
      if (roll == 2) {  // a CPU-only service holds 60 of the 64 CPUs, no GPU
        v.running.push_back(MakeGang(1000 + next++, "x", "inference-critical", v, {n.name}, {}, 0));
        v.running.back().nodes[0].cpu_millis = 60'000;
      }
      if (it == n.labels.end()) continue;
      ++leaf_free[it->second].gpus_free;
      if (roll != 2) ++leaf_free[it->second].fit;
    }
    bool required = draw(0, 1) == 1;
    auto nodes = static_cast<uint32_t>(draw(2, 8));
    v.pending = {
        MakeJob(1, "t", "experiment", {.nodes = nodes, .gpus = 8, .topology = Leaf(required)})};
    Decisions d = Plan(v, TreePolicy(), kNow);
    ClusterView plain_view = v;
    plain_view.pending[0].request.topology = {};
    Decisions plain = Plan(plain_view, TreePolicy(), kNow);

    // Best fit: of the leaves where the gang fits, the one with the fewest nodes whose
    // GPUs are free (the counts placement ranks leaves by).
    int best_fit = -1;
    for (const auto& [leaf, sf] : leaf_free) {
      if (sf.fit >= static_cast<int>(nodes) && (best_fit < 0 || sf.gpus_free < best_fit)) {
        best_fit = sf.gpus_free;
      }
    }
    const Placement* p = PlacementOf(d, 1);
    SCOPED_TRACE("world " + std::to_string(world));
    if (best_fit >= 0) {
      ASSERT_NE(p, nullptr) << OutcomeOf(d, 1).reason;
      std::set<std::string> leaves = LeavesOf(v, *p);
      ASSERT_EQ(leaves.size(), 1u);
      EXPECT_EQ(leaf_free[*leaves.begin()].gpus_free, best_fit) << "best fit";
      ++one_leaf_seen;
      continue;
    }
    if (required) {
      EXPECT_EQ(p, nullptr) << "no leaf holds it";
      ++waited_seen;
      continue;
    }
    // Preferred and no leaf holds it: placed whenever the plain pass places it, under one
    // spine when some spine holds it, in as few of that spine's leaves as the nodes where
    // members fit allow.
    ASSERT_EQ(p != nullptr, PlacementOf(plain, 1) != nullptr);
    if (!p) continue;
    ++spread_seen;
    std::map<std::string, int> spine_free;
    for (const auto& [leaf, sf] : leaf_free) spine_free[sf.spine] += sf.fit;
    std::set<std::string> spines_used;
    for (const NodePlacement& np : p->nodes) {
      auto it = v.nodes[np.node].labels.find(kSpine);
      spines_used.insert(it == v.nodes[np.node].labels.end() ? "(none)" : it->second);
    }
    bool some_spine = std::any_of(spine_free.begin(), spine_free.end(), [&](const auto& s) {
      return s.second >= static_cast<int>(nodes);
    });
    if (!some_spine) continue;
    ASSERT_EQ(spines_used.size(), 1u);
    std::vector<int> counts;
    for (const auto& [leaf, sf] : leaf_free) {
      if (sf.spine == *spines_used.begin()) counts.push_back(sf.fit);
    }
    std::sort(counts.rbegin(), counts.rend());
    size_t fewest = 0;
    for (int sum = 0; sum < static_cast<int>(nodes); sum += counts[fewest++]) {
    }
    EXPECT_EQ(p->topology_domains.size(), fewest);
  }
  // The worlds exercised every branch.
  EXPECT_GT(one_leaf_seen, 20);
  EXPECT_GT(spread_seen, 20);
  EXPECT_GT(waited_seen, 20);
}

}  // namespace
}  // namespace baton::sched
