#include "tests/coordinator/scheduler_random.h"

#include <algorithm>

#include "coordinator/scheduler/plan.h"
#include "tests/coordinator/scheduler_fixtures.h"

namespace baton::sched::testing {
namespace {

const char* const kClasses[] = {"inference-critical", "inference", "labeling", "training",
                                "experiment"};
const char* const kProfiles[] = {"1g.18gb", "2g.35gb"};

const Taint kDedicated{"dedicated", "inference", "NoSchedule"};

JobSpec RandomSpec(Random& r) {
  JobSpec s;
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
  s.submitted = static_cast<Time>(r.Int(0, kWorldNow));
  return s;
}

}  // namespace

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

PendingJob RandomJob(Random& r, JobId id) {
  std::string cls = r.Chance(0.02) ? "bogus" : kClasses[r.Int(0, 4)];
  PendingJob j = MakeJob(id, "t" + std::to_string(r.Int(0, 3)), cls, RandomSpec(r));
  if (r.Chance(0.1)) j.cooldown_until = kWorldNow + static_cast<Time>(r.Int(1, 600'000));
  j.evictions = static_cast<uint32_t>(r.Int(0, 3));
  return j;
}

Policy RandomPolicy(Random& r) {
  Policy p = TestPolicy();
  p.preemption_searches_per_pass = static_cast<uint32_t>(r.Int(1, 16));
  if (r.Chance(0.3)) p.pools = {PoolPolicy{"inference", {"inference", "inference-critical"}}};
  if (r.Chance(0.5)) {
    for (int t = 0; t < 3; ++t) {
      // One draw per statement, in the order GCC gave (see RandomNode).
      const uint32_t borrowing = r.Int(0, 16), lending = r.Int(0, 12), nominal = r.Int(0, 12);
      p.tenants.push_back(
          Tenant("t" + std::to_string(t), r.Int(1, 5), nominal, lending, borrowing));
    }
  }
  return p;
}

namespace {

// Running gangs: whatever a first pass placed, with random ages and checkpoints.
void SeedRunning(Random& r, ClusterView& v, const Policy& p) {
  for (JobId id = 1; id <= r.Int(0, 16); ++id) v.pending.push_back(RandomJob(r, id));
  for (auto& j : v.pending) j.cooldown_until = 0;
  Decisions seed = Plan(v, p, kWorldNow - 7'200'000);
  for (const Placement& pl : seed.placements) {
    const PendingJob& j = *std::find_if(v.pending.begin(), v.pending.end(),
                                        [&](const PendingJob& x) { return x.id == pl.job; });
    RunningGang g;
    g.id = j.id;
    g.tenant = j.tenant;
    g.priority_class = j.priority_class;
    g.nodes = ToHeld(v, pl);
    g.started = kWorldNow - static_cast<Time>(r.Int(0, 7'200'000));
    g.last_checkpoint =
        r.Chance(0.5) ? 0 : g.started + static_cast<Time>(r.Int(0, kWorldNow - g.started));
    g.evictions = static_cast<uint32_t>(r.Int(0, 3));
    v.running.push_back(std::move(g));
  }
  v.pending.clear();
}

}  // namespace

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
    g.started = kWorldNow;
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

}  // namespace baton::sched::testing
