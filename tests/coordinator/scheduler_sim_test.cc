// The scheduler over hours of simulated time: two classes submitting alternately do not
// thrash (evictions per job stay bounded and every job finishes), and weighted fair
// share converges to the weights while a tenant that ran alone waits for its usage to
// decay.
#include <algorithm>

#include "coordinator/sim/simulator.h"
#include "gtest/gtest.h"
#include "tests/coordinator/scheduler_fixtures.h"
#include "tests/coordinator/scheduler_invariants.h"

namespace baton::sched {
namespace {

using testing::JobSpec;
using testing::MakeJob;
using testing::MakeNode;

// The coordinator's loop on a simulated clock (coordinator/sim), every pass checked
// against the invariants.
class Simulator : public sim::Simulator {
 public:
  Simulator(std::vector<NodeInfo> nodes, Policy policy, sim::SimOptions options)
      : sim::Simulator(std::move(nodes), std::move(policy), options) {
    set_pass_observer([this](const ClusterView& view, Time now, const Decisions& d) {
      for (const std::string& p : testing::CheckDecisions(view, this->policy(), now, d)) {
        problems_.push_back("t=" + std::to_string(now / 1000) + "s: " + p);
      }
    });
  }
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

constexpr Time kMinute = 60'000;
constexpr Time kHour = 60 * kMinute;

std::vector<NodeInfo> Nodes(int n) {
  std::vector<NodeInfo> out;
  for (int i = 0; i < n; ++i) out.push_back(MakeNode("n" + std::to_string(i)));
  return out;
}

Policy AntiThrashPolicy() {
  Policy p = testing::TestPolicy();
  for (PriorityClass& c : p.classes) {
    if (c.service) continue;
    c.min_runtime_s = 600;    // 10 min, two checkpoints
    c.cooldown_base_s = 120;  // 2 min, doubling
    c.cooldown_cap_s = 1800;
  }
  return p;
}

TEST(SchedulerSimulation, AlternatingClassesDoNotThrash) {
  // Every 20 minutes for 6 hours, alternately: three 8-GPU training jobs (20 min of work)
  // or six 4-GPU experiments (25 min): 84% load on 32 GPUs, and every training burst
  // needs more than is free. Training preempts the experiments, which lose what they did
  // since their last checkpoint.
  sim::SimOptions options;
  options.save_on_eviction = false;
  Simulator sim(Nodes(4), AntiThrashPolicy(), options);
  JobId next = 1;
  for (int burst = 0; burst < 18; ++burst) {
    sim.RunUntil(burst * 20 * kMinute);
    bool training = burst % 2 == 0;
    for (int i = 0; i < (training ? 3 : 6); ++i) {
      sim.Submit(MakeJob(next++, training ? "hi" : "lo", training ? "training" : "experiment",
                         JobSpec{.gpus = training ? 8u : 4u}),
                 (training ? 20 : 25) * kMinute);
    }
  }
  sim.RunUntil(24 * kHour);
  ASSERT_TRUE(sim.problems().empty()) << sim.problems().front();
  EXPECT_GE(sim.evictions(), 10u) << "the scenario should exercise preemption";
  uint32_t most = 0;
  for (const auto& [id, job] : sim.jobs()) {
    EXPECT_TRUE(job.finished) << "job " << id << " never finished";
    most = std::max(most, job.evictions);
  }
  // Each eviction comes after at least the minimum runtime (two checkpoints of progress)
  // and a doubling cooldown, so a 25-minute job cannot be evicted more than a few times.
  EXPECT_LE(most, 3u);
}

// Keeps `queued` short 1-GPU jobs pending for each tenant.
void TopUp(Simulator& sim, const std::vector<std::string>& tenants, JobId& next, size_t queued) {
  for (const std::string& t : tenants) {
    size_t pending = std::count_if(sim.view().pending.begin(), sim.view().pending.end(),
                                   [&](const PendingJob& j) { return j.tenant == t; });
    for (; pending < queued; ++pending) {
      sim.Submit(MakeJob(next++, t, "training", JobSpec{.gpus = 1}), 2 * kMinute);
    }
  }
}

std::map<std::string, double> Shares(const Simulator& sim) {
  double total = 0;
  for (const auto& [t, ms] : sim.gpu_ms()) total += ms;
  std::map<std::string, double> out;
  for (const auto& [t, ms] : sim.gpu_ms()) out[t] = ms / total;
  return out;
}

Policy WeightedPolicy(double a, double b, double c) {
  Policy p = testing::TestPolicy();
  p.fair_share_half_life_s = 3600;
  for (auto [name, w] : {std::pair{"a", a}, {"b", b}, {"c", c}}) {
    TenantPolicy t;
    t.name = name;
    t.weight = w;
    p.tenants.push_back(t);
  }
  return p;
}

void RunWithDemand(Simulator& sim, const std::vector<std::string>& tenants, JobId& next,
                   Time until) {
  while (sim.now() < until) {
    TopUp(sim, tenants, next, 100);
    sim.Step();
  }
}

TEST(SchedulerSimulation, WeightedFairShareConvergesWithinTwoHalfLives) {
  // 80 GPUs, weights 1:2:5, endless 2-minute jobs, half-life 1 h. Over the second
  // half-life the GPU shares are within 5 points of 12.5%, 25%, 62.5%.
  Simulator sim(Nodes(10), WeightedPolicy(1, 2, 5), {});
  JobId next = 1;
  RunWithDemand(sim, {"a", "b", "c"}, next, kHour);
  sim.ResetGpuMs();
  RunWithDemand(sim, {"a", "b", "c"}, next, 2 * kHour);
  ASSERT_TRUE(sim.problems().empty()) << sim.problems().front();
  std::map<std::string, double> s = Shares(sim);
  EXPECT_NEAR(s["a"], 0.125, 0.05);
  EXPECT_NEAR(s["b"], 0.25, 0.05);
  EXPECT_NEAR(s["c"], 0.625, 0.05);
}

TEST(SchedulerSimulation, TenantThatRanAloneWaitsForItsUsageToDecay) {
  // Equal weights. a runs alone for a half-life; then b and c arrive. For the next half
  // hour a gets well under its third; four half-lives later its share is back near it.
  Simulator sim(Nodes(10), WeightedPolicy(1, 1, 1), {});
  JobId next = 1;
  RunWithDemand(sim, {"a"}, next, kHour);
  sim.ResetGpuMs();
  RunWithDemand(sim, {"a", "b", "c"}, next, kHour + 30 * kMinute);
  EXPECT_LT(Shares(sim)["a"], 0.20);
  RunWithDemand(sim, {"a", "b", "c"}, next, 4 * kHour);
  sim.ResetGpuMs();
  RunWithDemand(sim, {"a", "b", "c"}, next, 5 * kHour);
  EXPECT_NEAR(Shares(sim)["a"], 1.0 / 3, 0.05);
  ASSERT_TRUE(sim.problems().empty()) << sim.problems().front();
}

}  // namespace
}  // namespace baton::sched
