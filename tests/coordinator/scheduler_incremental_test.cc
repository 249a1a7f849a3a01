// Scheduler (the world kept from pass to pass) against Plan (the reference): over random
// worlds and random sequences of changes — jobs arrive, leave, are held, cool down;
// gangs start, end and are evicted; nodes disconnect, come back, join and leave; usage
// moves; time passes — every pass of the Scheduler makes the same placements, evictions,
// reservations and outcomes, in the same order and with the same texts, as Plan over the
// same world kept as a plain ClusterView beside it. Two thousand worlds in the unit run (about a
// second); BATON_EQUIVALENCE_WORLDS sets how many (the heavy ctest entry runs thousands).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "coordinator/scheduler/plan.h"
#include "coordinator/scheduler/scheduler.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_invariants.h"
#include "tests/coordinator/scheduler_random.h"

namespace baton::sched {
namespace {

using testing::kWorldNow;
using testing::Random;

// Replaces the element with x's key, or appends x.
template <typename T, typename Key>
void Put(std::vector<T>& v, const T& x, Key key) {
  auto it = std::find_if(v.begin(), v.end(), [&](const T& y) { return key(y) == key(x); });
  if (it == v.end()) {
    v.push_back(x);
  } else {
    *it = x;
  }
}

// The world twice: as the Scheduler keeps it and as a plain view for Plan. Every change
// goes to both.
class Twin {
 public:
  explicit Twin(const testing::World& w) : policy_(w.policy), view_(w.view), s_(w.policy) {
    for (const NodeInfo& n : view_.nodes) s_.UpsertNode(n);
    for (const RunningGang& g : view_.running) s_.UpsertRunning(g);
    for (const PendingJob& j : view_.pending) s_.UpsertPending(j);
    s_.SetUsage(view_.usage);
  }

  const ClusterView& view() const { return view_; }

  // Both passes; the difference, or "" when they agree.
  std::string Pass(Time now, Decisions* out) {
    *out = s_.Plan(now);
    std::string d = testing::DiffDecisions(Plan(view_, policy_, now), *out);
    if (!d.empty())
      d += "\nagainst View(): " + testing::DiffDecisions(Plan(s_.View(), policy_, now), *out);
    return d;
  }

  void UpsertNode(const NodeInfo& n) {
    Put(view_.nodes, n, [](const NodeInfo& x) { return x.name; });
    s_.UpsertNode(n);
  }
  void RemoveNode(std::string name) {  // by value: callers pass names from view_
    std::erase_if(view_.nodes, [&](const NodeInfo& x) { return x.name == name; });
    s_.RemoveNode(name);
  }
  void UpsertRunning(const RunningGang& g) {
    Put(view_.running, g, [](const RunningGang& x) { return x.id; });
    s_.UpsertRunning(g);
  }
  void RemoveRunning(JobId id) {
    std::erase_if(view_.running, [&](const RunningGang& x) { return x.id == id; });
    s_.RemoveRunning(id);
  }
  void UpsertPending(const PendingJob& j) {
    Put(view_.pending, j, [](const PendingJob& x) { return x.id; });
    s_.UpsertPending(j);
  }
  void RemovePending(JobId id) {
    std::erase_if(view_.pending, [&](const PendingJob& x) { return x.id == id; });
    s_.RemovePending(id);
  }
  void SetUsage(const std::map<std::string, double>& usage) {
    view_.usage = usage;
    s_.SetUsage(usage);
  }

  // What the coordinator does with a pass's decisions (testing::Apply), change by change.
  void Apply(const Decisions& d, Time now) {
    for (const Placement& pl : d.placements) {
      auto it = std::find_if(view_.pending.begin(), view_.pending.end(),
                             [&](const PendingJob& j) { return j.id == pl.job; });
      RunningGang g;
      g.id = it->id;
      g.tenant = it->tenant;
      g.user = it->user;
      g.priority_class = it->priority_class;
      g.nodes = ToHeld(view_, pl);
      g.started = now;
      g.evictions = it->evictions;
      RemovePending(pl.job);
      UpsertRunning(g);
    }
    for (const Eviction& e : d.evictions) {
      for (RunningGang g : view_.running) {
        if (g.id != e.victim) continue;
        g.evicting = true;
        g.evicting_for = e.preemptor;
        UpsertRunning(g);
        break;
      }
    }
    for (PendingJob j : view_.pending) {
      std::vector<std::string> reserved;
      for (const Reservation& r : d.reservations) {
        if (r.job != j.id || r.kind != Reservation::Kind::kPreemption) continue;
        for (uint32_t n : r.nodes) reserved.push_back(view_.nodes[n].name);
      }
      if (reserved == j.reserved_nodes) continue;
      j.reserved_nodes = reserved;
      UpsertPending(j);
    }
  }

 private:
  Policy policy_;
  ClusterView view_;
  Scheduler s_;
};

// Some worlds get a switch tree: nodes labelled by leaf, multi-node jobs asking for one
// (required or preferred, some relaxing after a wait, so that a job's shape changes with
// the time between passes).
constexpr char kLeaf[] = "topology.baton.io/leaf";
bool tree = false;

void Label(NodeInfo& n) {
  if (tree) n.labels[kLeaf] = "leaf-" + std::to_string(n.name.size() % 3);
}
void AskLeaf(Random& r, PendingJob& j) {
  if (!tree || j.request.nodes < 2) return;
  j.request.topology = {"leaf", r.Chance(0.6), r.Chance(0.5) ? 12'000 : 0};
}

// Random changes between two passes, as a coordinator sees them.
void Change(Random& r, Twin& t, JobId& next_id, int& next_node, Time now) {
  const ClusterView& v = t.view();
  for (uint64_t k = r.Int(0, 4); k > 0; --k) {  // arrivals (some held or waiting)
    PendingJob j = testing::RandomJob(r, next_id++);
    AskLeaf(r, j);
    if (r.Chance(0.05)) j.held = "held by alice";
    if (r.Chance(0.05)) j.waits_for = "waiting for job 1 to succeed";
    t.UpsertPending(j);
  }
  if (!v.pending.empty() && r.Chance(0.4)) t.RemovePending(r.Pick(v.pending).id);  // cancel
  if (!v.pending.empty() && r.Chance(0.2)) {  // a hold released or set
    PendingJob j = r.Pick(v.pending);
    j.held = j.held.empty() && r.Chance(0.5) ? "held by bob" : "";
    t.UpsertPending(j);
  }
  if (!v.running.empty() && r.Chance(0.2)) {  // a node of a leaving gang confirmed its exit
    RunningGang g = r.Pick(v.running);
    if (g.nodes.size() > 1) {
      g.nodes.erase(g.nodes.begin() + static_cast<ptrdiff_t>(r.Int(0, g.nodes.size() - 1)));
      g.evicting = true;
      t.UpsertRunning(g);
    }
  }
  if (!v.running.empty() && r.Chance(0.4)) {  // a gang ends
    t.RemoveRunning(r.Pick(v.running).id);
  }
  for (size_t i = 0; i < v.running.size(); ++i) {  // evicted gangs leave, jobs cool down
    const RunningGang g = v.running[i];
    if (!g.evicting || !r.Chance(0.5)) continue;
    t.RemoveRunning(g.id);
    PendingJob j = testing::RandomJob(r, g.id);
    j.tenant = g.tenant;
    j.priority_class = g.priority_class;
    j.evictions = g.evictions + 1;
    j.cooldown_until = now + static_cast<Time>(r.Int(0, 20'000));
    t.UpsertPending(j);
    break;
  }
  if (!v.nodes.empty() && r.Chance(0.1)) {  // a node disconnects or comes back
    NodeInfo n = r.Pick(v.nodes);
    n.schedulable = !n.schedulable;
    t.UpsertNode(n);
  }
  if (r.Chance(0.05)) {  // a node joins
    NodeInfo n = testing::RandomNode(r, next_node++);
    Label(n);
    t.UpsertNode(n);
  }
  if (v.nodes.size() > 1 && r.Chance(0.03)) t.RemoveNode(r.Pick(v.nodes).name);  // lost
  if (r.Chance(0.3)) {
    std::map<std::string, double> usage = v.usage;
    usage["t" + std::to_string(r.Int(0, 3))] += static_cast<double>(r.Int(0, 50'000));
    t.SetUsage(usage);
  }
}

int Worlds(int fallback) {
  const char* env = std::getenv("BATON_EQUIVALENCE_WORLDS");
  return env ? std::max(1, std::atoi(env)) : fallback;
}

TEST(SchedulerEquivalence, SameDecisionsAsPlanPassByPass) {
  const int worlds = Worlds(2000);
  constexpr int kPasses = 12;
  uint64_t placed = 0, evicted = 0, reserved = 0, passes = 0;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(worlds); ++seed) {
    testing::World w = testing::RandomWorld(seed);
    Random r(seed * 7919);
    tree = r.Chance(0.5);
    if (tree) {
      w.policy.topology_levels = {{"leaf", kLeaf}};
      for (NodeInfo& n : w.view.nodes) Label(n);
      for (PendingJob& j : w.view.pending) AskLeaf(r, j);
    }
    Twin twin(w);
    JobId next_id = 5000;
    int next_node = 100;
    Time now = kWorldNow;
    for (int p = 0; p < kPasses; ++p, ++passes) {
      Decisions d;
      std::string diff = twin.Pass(now, &d);
      ASSERT_EQ(diff, "") << "seed " << seed << ", pass " << p << "\n"
                          << testing::DescribePass(twin.view(), d);
      placed += d.placements.size();
      evicted += d.evictions.size();
      reserved += d.reservations.size();
      twin.Apply(d, now);
      now += static_cast<Time>(r.Int(0, 10'000));
      Change(r, twin, next_id, next_node, now);
    }
  }
  // The sequences exercise every kind of decision, not just the easy ones.
  EXPECT_GT(placed, static_cast<uint64_t>(worlds));
  EXPECT_GT(evicted, static_cast<uint64_t>(worlds) / 20);
  EXPECT_GT(reserved, static_cast<uint64_t>(worlds) / 10);
  EXPECT_EQ(passes, static_cast<uint64_t>(worlds) * kPasses);
}

}  // namespace
}  // namespace baton::sched
