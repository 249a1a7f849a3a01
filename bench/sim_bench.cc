// baton-bench-sim: how fast baton-sim replays a trace through the real scheduler.
//   1k:  1,000 nodes × 8 GPUs (10% a tainted inference pool), 100,000 synthetic batch jobs
//        over 3 days at 85% offered load, diurnal inference replicas, 8 tenants with
//        nominal quotas lending at most 30%: simulated seconds per wall second up to the
//        last submit (`sim_speedup`, target >= 1,000, i.e. 3 days in under ~4.3 minutes).
//  10k: the same trace shape on 10,000 nodes (durations scaled to the same load), run
//        for at most 4 wall minutes: `sim_speedup_10k` (shown).
// Prints the passes, the time inside Plan and the rest (event handling, accounting), and
// ends with one JSON line (keys in docs/benchmarks.md).
//   baton-bench-sim [--jobs=100000] [--days=3] [--skip-10k]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/bench_flags.h"
#include "coordinator/policy.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/generate.h"
#include "coordinator/sim/report.h"
#include "coordinator/sim/trace.h"

namespace baton::sim {
namespace {

constexpr uint32_t kTenants = 8;

std::vector<sched::NodeInfo> Cluster(uint32_t nodes) {
  std::vector<sched::NodeInfo> out;
  for (uint32_t i = 0; i < nodes; ++i) {
    sched::NodeInfo n = MakeNode("node-" + std::to_string(i), NodeShape{});
    if (i % 10 == 0) {
      n.pool = "inference";
      n.taints = {sched::Taint{"dedicated", "inference", "NoSchedule"}};
    }
    out.push_back(std::move(n));
  }
  return out;
}

// The default classes; 80% of the batch GPUs shared out as nominal quotas (30% lendable),
// serving owns the inference pool and lends nothing.
Policy BenchPolicy(uint32_t nodes) {
  Policy p = Policy::Default();
  uint32_t batch_gpus = nodes * 8 * 9 / 10;
  for (uint32_t t = 0; t < kTenants; ++t) {
    TenantPolicy tp;
    tp.name = std::string("team-") + static_cast<char>('a' + t);
    tp.weight = 1 + t % 3;
    uint32_t per = batch_gpus * 8 / 10 / kTenants;
    tp.nominal = Resources{sched::kUnlimited.cpu_millis, sched::kUnlimited.memory_bytes, per};
    tp.lending_limit =
        Resources{sched::kUnlimited.cpu_millis, sched::kUnlimited.memory_bytes, per * 3 / 10};
    p.tenants.push_back(tp);
  }
  TenantPolicy serve;
  serve.name = "serving";
  serve.nominal =
      Resources{sched::kUnlimited.cpu_millis, sched::kUnlimited.memory_bytes, nodes * 8 / 10};
  serve.lending_limit = Resources{0, 0, 0};
  p.tenants.push_back(serve);
  p.pools = {sched::PoolPolicy{"inference", {"inference-critical", "inference"}}};
  return p;
}

struct Result {
  double simulated_s = 0, wall_s = 0, plan_s = 0;
  double window_simulated_s = 0, window_wall_s = 0;  // up to the last submit
  uint64_t passes = 0, plans = 0, evictions = 0, finished = 0, jobs = 0;
  double utilisation = 0;
  bool cut = false;  // the wall budget ran out first
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The trace replayed as SimulateTrace does, timed up to the last submit and to the end;
// with `budget_s`, it stops (after a simulated hour) once that much wall time went by.
Result RunOnce(uint32_t nodes, uint64_t jobs, double days, double budget_s) {
  SyntheticOptions o;
  o.jobs = jobs;
  o.days = days;
  o.seed = 42;
  o.tenants = kTenants;
  o.cluster_gpus = nodes * 8 * 9 / 10;
  o.load = 0.85;
  o.max_gang_nodes = 32;
  o.services = nodes / 50;
  std::vector<TraceJob> trace = GenerateTrace(o);
  std::vector<sched::NodeInfo> cluster = Cluster(nodes);
  Policy policy = BenchPolicy(nodes);
  SimOptions options;
  options.sample_interval_ms = 300'000;
  options.grace_ms = Time{policy.default_grace_seconds} * 1000;
  Simulator sim(cluster, policy, options);
  PoolTolerations tolerations = TolerationsByPool(cluster, policy.default_pool);
  Time last = 0;
  for (const TraceJob& j : trace) {
    sim.Submit(ToPending(j, policy, tolerations), WorkOf(j));
    last = std::max(last, j.submit_ms);
  }
  Result r;
  auto t0 = std::chrono::steady_clock::now();
  constexpr Time kHour = 3'600'000;
  while (sim.now() < last && !(budget_s > 0 && Since(t0) > budget_s)) {
    sim.RunUntil(std::min(last, sim.now() + kHour));
  }
  r.window_wall_s = Since(t0);
  r.window_simulated_s = static_cast<double>(sim.now() - sim.start()) / 1000;
  r.cut = sim.now() < last;
  if (!r.cut) sim.RunToCompletion(last + 7 * 24 * kHour);
  r.wall_s = Since(t0);
  r.simulated_s = static_cast<double>(sim.now() - sim.start()) / 1000;
  r.plan_s = sim.plan_seconds();
  r.passes = sim.passes();
  r.plans = sim.plans();
  r.evictions = sim.evictions();
  r.jobs = sim.jobs().size();
  for (const auto& [id, j] : sim.jobs()) r.finished += j.finished;
  r.utilisation = Summarize(sim)["all"]["utilisation"].get<double>();
  return r;
}

void Print(const char* name, uint32_t nodes, const Result& r) {
  std::printf(
      "%s: %u nodes, %llu jobs: submissions (%.0f simulated s) in %.1f wall s = %.0fx real "
      "time%s; whole run %.0f simulated s in %.1f wall s = %.0fx; %llu passes, %llu with a "
      "job to decide (%.2f ms each in Plan, %.1f s outside Plan), %llu evictions, %llu "
      "finished, utilisation %.1f%%\n",
      name, nodes, static_cast<unsigned long long>(r.jobs), r.window_simulated_s, r.window_wall_s,
      r.window_simulated_s / r.window_wall_s, r.cut ? " (cut at the wall budget)" : "",
      r.simulated_s, r.wall_s, r.simulated_s / r.wall_s, static_cast<unsigned long long>(r.passes),
      static_cast<unsigned long long>(r.plans), r.plans ? r.plan_s * 1000 / r.plans : 0,
      r.wall_s - r.plan_s, static_cast<unsigned long long>(r.evictions),
      static_cast<unsigned long long>(r.finished), r.utilisation * 100);
  std::fflush(stdout);
}

}  // namespace
}  // namespace baton::sim

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-sim", "baton-sim's speed on 1k and 10k nodes");
  opts.add_options()("jobs", "jobs in the trace",
                     cxxopts::value<int64_t>()->default_value("100000"))(
      "days", "the trace's length", cxxopts::value<double>()->default_value("3"))(
      "skip-10k", "only the 1k-node cluster");
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  const auto jobs =
      static_cast<uint64_t>(baton::bench::FlagAtLeast<int64_t>(opts, flags, "jobs", 1));
  const double days = flags["days"].as<double>();
  if (!(days > 0)) baton::bench::BadFlags(opts, "--days must be above 0");
  const bool skip_10k = flags.count("skip-10k") > 0;
  // The figure is the submission window's: the drain after the last submit (a few long
  // jobs, few passes) would flatter it.
  baton::sim::Result small = baton::sim::RunOnce(1000, jobs, days, /*budget_s=*/0);
  baton::sim::Print("1k", 1000, small);
  double speedup = small.window_simulated_s / small.window_wall_s, speedup_10k = 0;
  if (!skip_10k) {
    // Ten times the nodes and the same trace shape at the same load: each pass costs ~10x,
    // so this one runs for at most 4 wall minutes and reports the pace so far.
    baton::sim::Result large = baton::sim::RunOnce(10'000, jobs, days, /*budget_s=*/240);
    baton::sim::Print("10k", 10'000, large);
    speedup_10k = large.window_simulated_s / large.window_wall_s;
  }
  std::printf("{\"sim_speedup\": %.1f, \"sim_speedup_10k\": %.1f}\n", speedup, speedup_10k);
  return 0;
}
