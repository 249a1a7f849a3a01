// Properties of Plan over thousands of random clusters and queues: every pass keeps the
// rules CheckDecisions checks (no over-commit, whole gangs, legal victims, no start in
// cooldown, ...); inference never waits for quota its tenant has; identical input (in
// any order) gives identical decisions; the victims Explain names are the victims the
// pass evicts; and the pass after applying the decisions keeps the rules too.
#include <algorithm>
#include <map>
#include <random>

#include "coordinator/scheduler/explain.h"
#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"
#include "tests/coordinator/scheduler_invariants.h"

namespace baton::sched {
namespace {

using testing::kGi;
using testing::MakeJob;
using testing::MakeMigNode;
using testing::MakeNode;
using testing::NodeSpec;

constexpr Time kNow = 360'000'000;
constexpr int kWorlds = 3000;
const char* const kClasses[] = {"inference-critical", "inference", "labeling", "training",
                                "experiment"};
const char* const kProfiles[] = {"1g.18gb", "2g.35gb"};

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  uint64_t Int(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, v.size() - 1)];
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

const Taint kDedicated{"dedicated", "inference", "NoSchedule"};

NodeInfo RandomNode(Random& r, int i) {
  std::string name = "n" + std::to_string(i);
  NodeInfo n;
  if (r.Chance(0.15)) {
    // One draw per statement: the order in which a compiler evaluates arguments is
    // unspecified (GCC goes right to left, clang left to right), and a seed must make the
    // same world under both. These keep the order GCC gave.
    const char* profile = kProfiles[r.Int(0, 1)];
    const uint32_t slices = r.Int(2, 4);
    n = MakeMigNode(name, r.Int(1, 2), slices, profile);
  } else {
    NodeSpec s;
    s.gpus = std::vector<uint32_t>{0, 2, 4, 8}[r.Int(0, 3)];
    s.numa = r.Int(1, 2);
    s.cores = std::vector<uint32_t>{16, 32, 64}[r.Int(0, 2)];
    s.memory = r.Int(2, 8) * 64 * kGi;
    if (r.Chance(0.25)) {
      s.pool = "inference";
      s.taints = {kDedicated};
    }
    s.labels = {{"zone", r.Chance(0.5) ? "a" : "b"}};
    s.smt = r.Chance(0.4) ? 2 : 1;  // siblings: inference must hold them together
    n = MakeNode(name, s);
  }
  n.schedulable = !r.Chance(0.05);
  return n;
}

testing::JobSpec RandomSpec(Random& r) {
  testing::JobSpec s;
  s.nodes = r.Chance(0.8) ? 1 : r.Int(2, 3);
  s.gpus = std::vector<uint32_t>{0, 1, 2, 4, 8}[r.Int(0, 4)];
  s.ranks = s.gpus && s.gpus % 2 == 0 && r.Chance(0.3) ? 2 : (r.Chance(0.2) ? 1 : 0);
  s.cpu = (s.gpus ? s.gpus : 1) * r.Int(1, 8) * 1000;
  s.memory = (s.gpus ? s.gpus : 1) * r.Int(4, 64) * kGi;
  if (r.Chance(0.1)) {
    s.mig = kProfiles[r.Int(0, 1)];
    s.gpus = r.Int(1, 3);
    s.ranks = r.Chance(0.9) ? s.gpus : 1;
    s.mpi = r.Chance(0.1);
  }
  if (r.Chance(0.25)) {
    s.pool = "inference";
    if (r.Chance(0.7)) s.tolerations = {{"dedicated", "inference", "NoSchedule", false}};
  }
  if (r.Chance(0.1)) s.selector = {{"zone", r.Chance(0.5) ? "a" : "b"}};
  s.submitted = static_cast<Time>(r.Int(0, kNow));
  return s;
}

PendingJob RandomJob(Random& r, JobId id) {
  std::string cls = r.Chance(0.02) ? "bogus" : kClasses[r.Int(0, 4)];
  PendingJob j = MakeJob(id, "t" + std::to_string(r.Int(0, 3)), cls, RandomSpec(r));
  if (r.Chance(0.1)) j.cooldown_until = kNow + static_cast<Time>(r.Int(1, 600'000));
  j.evictions = static_cast<uint32_t>(r.Int(0, 3));
  return j;
}

Policy RandomPolicy(Random& r) {
  Policy p = testing::TestPolicy();
  p.preemption_searches_per_pass = static_cast<uint32_t>(r.Int(1, 16));
  if (r.Chance(0.3)) p.pools = {PoolPolicy{"inference", {"inference", "inference-critical"}}};
  if (r.Chance(0.5)) {
    for (int t = 0; t < 3; ++t) {
      // One draw per statement, in the order GCC gave (see RandomNode).
      const uint32_t borrowing = r.Int(0, 16), lending = r.Int(0, 12), nominal = r.Int(0, 12);
      p.tenants.push_back(
          testing::Tenant("t" + std::to_string(t), r.Int(1, 5), nominal, lending, borrowing));
    }
  }
  return p;
}

// Running gangs: whatever a first pass placed, with random ages and checkpoints.
void SeedRunning(Random& r, ClusterView& v, const Policy& p) {
  for (JobId id = 1; id <= r.Int(0, 16); ++id) v.pending.push_back(RandomJob(r, id));
  for (auto& j : v.pending) j.cooldown_until = 0;
  Decisions seed = Plan(v, p, kNow - 7'200'000);
  for (const Placement& pl : seed.placements) {
    const PendingJob& j = *std::find_if(v.pending.begin(), v.pending.end(),
                                        [&](const PendingJob& x) { return x.id == pl.job; });
    RunningGang g;
    g.id = j.id;
    g.tenant = j.tenant;
    g.priority_class = j.priority_class;
    g.nodes = ToHeld(v, pl);
    g.started = kNow - static_cast<Time>(r.Int(0, 7'200'000));
    g.last_checkpoint =
        r.Chance(0.5) ? 0 : g.started + static_cast<Time>(r.Int(0, kNow - g.started));
    g.evictions = static_cast<uint32_t>(r.Int(0, 3));
    v.running.push_back(std::move(g));
  }
  v.pending.clear();
}

struct World {
  ClusterView view;
  Policy policy;
};

World RandomWorld(uint64_t seed) {
  Random r(seed);
  World w;
  w.policy = RandomPolicy(r);
  for (int i = 0, n = static_cast<int>(r.Int(1, 8)); i < n; ++i) {
    w.view.nodes.push_back(RandomNode(r, i));
  }
  SeedRunning(r, w.view, w.policy);
  for (JobId id = 1000, n = r.Int(1, 15); id < 1000 + n; ++id) {
    w.view.pending.push_back(RandomJob(r, id));
    if (r.Chance(0.1)) w.view.pending.back().reserved_nodes = {r.Pick(w.view.nodes).name};
  }
  for (RunningGang& g : w.view.running) {
    if (!r.Chance(0.1)) continue;
    g.evicting = true;
    g.evicting_for = r.Chance(0.5) ? r.Pick(w.view.pending).id : 0;
  }
  for (int t = 0; t < 4; ++t) w.view.usage["t" + std::to_string(t)] = r.Int(0, 100'000);
  return w;
}

// What the coordinator does with the decisions before the next pass.
void Apply(ClusterView& v, const Decisions& d) {
  for (const Placement& pl : d.placements) {
    auto it = std::find_if(v.pending.begin(), v.pending.end(),
                           [&](const PendingJob& j) { return j.id == pl.job; });
    RunningGang g;
    g.id = it->id;
    g.tenant = it->tenant;
    g.priority_class = it->priority_class;
    g.nodes = ToHeld(v, pl);
    g.started = kNow;
    v.running.push_back(std::move(g));
    v.pending.erase(it);
  }
  for (const Eviction& e : d.evictions) {
    for (RunningGang& g : v.running) {
      if (g.id == e.victim) g.evicting = true, g.evicting_for = e.preemptor;
    }
  }
  for (PendingJob& j : v.pending) {
    j.reserved_nodes.clear();
    for (const Reservation& r : d.reservations) {
      if (r.job != j.id || r.kind != Reservation::Kind::kPreemption) continue;
      for (uint32_t n : r.nodes) j.reserved_nodes.push_back(v.nodes[n].name);
    }
  }
}

// Inference waits for quota only when its tenant would really go over its nominal.
void CheckInferenceQuota(const World& w, const Decisions& d, std::vector<std::string>& out) {
  std::map<std::string, uint64_t> gpus;  // held at the start plus granted in the pass
  for (const RunningGang& g : w.view.running) {
    for (const HeldNode& h : g.nodes) gpus[g.tenant] += h.gpu_uuids.size();
  }
  std::map<JobId, const PendingJob*> pending;
  for (const PendingJob& j : w.view.pending) pending[j.id] = &j;
  auto ask = [](const PendingJob& j) {
    return uint64_t{j.request.gpus_per_node} * j.request.nodes;
  };
  for (const Placement& p : d.placements) gpus[pending[p.job]->tenant] += ask(*pending[p.job]);
  for (const Reservation& r : d.reservations) {
    if (r.kind == Reservation::Kind::kPreemption)
      gpus[pending[r.job]->tenant] += ask(*pending[r.job]);
  }
  for (const JobOutcome& o : d.outcomes) {
    const PendingJob& j = *pending[o.job];
    const PriorityClass* c = w.policy.Find(j.priority_class);
    const TenantPolicy& t = w.policy.Tenant(j.tenant);
    if (o.outcome != Outcome::kWaitForQuota || !c || !c->service || !t.nominal) continue;
    // The fixtures' quotas limit GPUs only (CPU and memory nominals are huge).
    if (gpus[j.tenant] + ask(j) <= t.nominal->gpus) {
      out.push_back("inference job " + std::to_string(o.job) + " waits for quota it has");
    }
  }
}

void CheckExplain(const World& w, const Decisions& d, std::vector<std::string>& out) {
  for (const PendingJob& j : w.view.pending) {
    Explanation e = Explain(w.view, w.policy, kNow, j.id);
    std::vector<JobId> named, evicted;
    for (const Eviction& ev : e.evictions) named.push_back(ev.victim);
    for (const Eviction& ev : d.evictions) {
      if (ev.preemptor == j.id) evicted.push_back(ev.victim);
    }
    if (named != evicted) out.push_back("explain names other victims for " + std::to_string(j.id));
    if (e.outcome != testing::OutcomeOf(d, j.id).outcome) out.push_back("explain outcome differs");
  }
}

// Identical input, in any order, gives identical decisions.
void CheckDeterminism(const World& w, const Decisions& d, uint64_t seed,
                      std::vector<std::string>& out) {
  auto same = [&](const ClusterView& view, const char* what) {
    std::string diff = testing::DiffDecisions(d, Plan(view, w.policy, kNow));
    if (!diff.empty()) out.push_back(std::string(what) + ", other decisions: " + diff);
  };
  same(w.view, "same input");
  ClusterView shuffled = w.view;
  Random r(seed);
  std::shuffle(shuffled.pending.begin(), shuffled.pending.end(), r.engine());
  std::shuffle(shuffled.running.begin(), shuffled.running.end(), r.engine());
  same(shuffled, "shuffled input");
  // Pending jobs in submission order take the bucket-sort path of the queue order.
  ClusterView in_order = w.view;
  std::sort(in_order.pending.begin(), in_order.pending.end(),
            [](const PendingJob& a, const PendingJob& b) {
              return std::tie(a.submitted, a.id) < std::tie(b.submitted, b.id);
            });
  same(in_order, "input in submission order");
}

TEST(SchedulerProperty, RandomClustersKeepEveryRule) {
  uint64_t evictions = 0, placements = 0, reserved = 0;
  for (uint64_t seed = 1; seed <= kWorlds; ++seed) {
    World w = RandomWorld(seed);
    Decisions d = Plan(w.view, w.policy, kNow);
    std::vector<std::string> problems = testing::CheckDecisions(w.view, w.policy, kNow, d);
    CheckInferenceQuota(w, d, problems);
    CheckExplain(w, d, problems);
    CheckDeterminism(w, d, seed, problems);
    // The next pass, with the decisions applied, keeps the rules as well.
    World next = w;
    Apply(next.view, d);
    Decisions d2 = Plan(next.view, next.policy, kNow + 1000);
    for (const std::string& p : testing::CheckDecisions(next.view, next.policy, kNow + 1000, d2)) {
      problems.push_back("next pass: " + p);
    }
    ASSERT_TRUE(problems.empty()) << "seed " << seed << ": " << problems.front() << "\n"
                                  << testing::DescribePass(w.view, d);
    evictions += d.evictions.size() + d2.evictions.size();
    placements += d.placements.size() + d2.placements.size();
    reserved += d.reservations.size();
  }
  // The worlds exercise every path, not just the easy ones.
  EXPECT_GT(evictions, 100u);
  EXPECT_GT(placements, 3000u);
  EXPECT_GT(reserved, 300u);
}

}  // namespace
}  // namespace baton::sched
