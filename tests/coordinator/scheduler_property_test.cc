// Properties of Plan over thousands of random clusters and queues: every pass keeps the
// rules CheckDecisions checks (no over-commit, whole gangs, legal victims, no start in
// cooldown, ...); inference never waits for quota its tenant has; identical input (in
// any order) gives identical decisions; the victims Explain names are the victims the
// pass evicts; and the pass after applying the decisions keeps the rules too.
#include <algorithm>
#include <map>

#include "coordinator/scheduler/explain.h"
#include "coordinator/scheduler/plan.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"
#include "tests/coordinator/scheduler_invariants.h"
#include "tests/coordinator/scheduler_random.h"

namespace baton::sched {
namespace {

using testing::Apply;
using testing::kWorldNow;
constexpr Time kNow = kWorldNow;
using testing::Random;
using testing::RandomWorld;
using testing::World;

constexpr int kWorlds = 3000;

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
