// baton-bench-sim: how fast baton-sim replays a trace through the real scheduler.
//   1k:  1,000 nodes × 8 GPUs (10% a tainted inference pool), 100,000 synthetic batch jobs
//        over 3 days at 85% offered load, diurnal inference replicas, 8 tenants with
//        nominal quotas lending at most 30%: simulated seconds per wall second up to the
//        last submit (`sim_speedup`, target >= 1,000, i.e. 3 days in under ~4.3 minutes).
//  10k: the same trace shape on 10,000 nodes (durations scaled to the same load), run
//        for at most 4 wall minutes: `sim_speedup_10k` (shown).
//  topology (issue 50): 512 nodes as 64 leaves of 8 under 2 spines, a generated trace of
//        gangs of up to 32 nodes among the small jobs, and the network's price s = 0.1 (a
//        gang over k more leaves than it needs runs 1 + 0.1·k times as long), replayed
//        once with every batch class asking for a leaf (preferred) and once without:
//        `spread_gangs_fraction` (with), `gang_wait_p95_topology_vs_plain`,
//        `gang_jct_mean_topology_vs_plain` (multi-node gangs, submit to finish).
// Prints the passes, the time inside Plan and the rest (event handling, accounting), and
// ends with one JSON line (keys in docs/benchmarks.md).
//   baton-bench-sim [--jobs=100000] [--days=3] [--skip-10k] [--topology-jobs=20000]
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

// The topology round: one replay of the tree cluster, with or without leaf requests.
nlohmann::json RunTree(uint64_t jobs, bool topology) {
  constexpr uint32_t kNodes = 512;
  SyntheticOptions o;
  o.jobs = jobs;
  o.days = 2;
  o.seed = 50;
  o.tenants = kTenants;
  o.cluster_gpus = kNodes * 8;
  o.load = 0.85;
  o.max_gang_nodes = 32;
  o.services = 0;
  std::vector<TraceJob> trace = GenerateTrace(o);
  std::vector<sched::NodeInfo> cluster;
  for (uint32_t i = 0; i < kNodes; ++i) {
    sched::NodeInfo n = MakeNode("node-" + std::to_string(i), NodeShape{});
    n.labels[kLeafLabel] = "leaf-" + std::to_string(i / 8 + 1);
    n.labels[kSpineLabel] = "spine-" + std::to_string(i / (8 * 32) + 1);
    cluster.push_back(std::move(n));
  }
  Policy policy = BenchPolicy(kNodes * 10 / 9);  // quotas over all 512 nodes: no inference pool
  policy.pools.clear();
  policy.topology_levels = {{"leaf", kLeafLabel}, {"spine", kSpineLabel}};
  for (sched::PriorityClass& c : policy.classes) {
    if (topology && !c.service) c.topology = {"leaf", false, 0};
  }
  SimOptions options;
  options.grace_ms = Time{policy.default_grace_seconds} * 1000;
  options.nodes_per_leaf = 8;
  options.topology_slowdown = 0.1;
  std::unique_ptr<Simulator> sim = SimulateTrace(cluster, policy, trace, options, 14 * 86'400'000);
  return Summarize(*sim)["gangs"];
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
      "skip-10k", "only the 1k-node cluster")("topology-jobs",
                                              "jobs in the topology round's trace (0: skip it)",
                                              cxxopts::value<int64_t>()->default_value("20000"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  const auto jobs =
      static_cast<uint64_t>(baton::bench::FlagAtLeast<int64_t>(opts, flags, "jobs", 1));
  const double days = flags["days"].as<double>();
  if (!(days > 0)) baton::bench::BadFlags(opts, "--days must be above 0");
  const bool skip_10k = flags.count("skip-10k") > 0;
  const auto tree_jobs = baton::bench::FlagAtLeast<int64_t>(opts, flags, "topology-jobs", 0);
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
  double spread = 0, wait_ratio = 0, jct_ratio = 0;
  if (tree_jobs > 0) {
    nlohmann::json with = baton::sim::RunTree(static_cast<uint64_t>(tree_jobs), true);
    nlohmann::json without = baton::sim::RunTree(static_cast<uint64_t>(tree_jobs), false);
    auto line = [](const char* name, const nlohmann::json& g) {
      std::printf(
          "topology %s: %u multi-node gangs, %u spread over more leaves than they need "
          "(%.1f%%), wait p95 %.0f s, mean completion %.0f s\n",
          name, g["jobs"].get<uint32_t>(), g["spread"].get<uint32_t>(),
          g["spread_fraction"].get<double>() * 100, g["wait_s"]["p95"].get<double>(),
          g["jct_mean_s"].get<double>());
    };
    line("asked (leaf, preferred)", with);
    line("not asked", without);
    spread = with["spread_fraction"].get<double>();
    double plain_wait = without["wait_s"]["p95"].get<double>();
    double plain_jct = without["jct_mean_s"].get<double>();
    wait_ratio = plain_wait > 0 ? with["wait_s"]["p95"].get<double>() / plain_wait : 0;
    jct_ratio = plain_jct > 0 ? with["jct_mean_s"].get<double>() / plain_jct : 0;
  }
  std::printf(
      "{\"sim_speedup\": %.1f, \"sim_speedup_10k\": %.1f, \"spread_gangs_fraction\": %.4f, "
      "\"gang_wait_p95_topology_vs_plain\": %.3f, \"gang_jct_mean_topology_vs_plain\": %.3f}\n",
      speedup, speedup_10k, spread, wait_ratio, jct_ratio);
  return 0;
}
