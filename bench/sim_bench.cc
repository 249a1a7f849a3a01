// baton-bench-sim: how fast baton-sim replays a trace through the real scheduler.
//   1k:  1,000 nodes × 8 GPUs (10% a tainted inference pool), 100,000 synthetic batch jobs
//        over 3 days at 85% offered load, diurnal inference replicas, 8 tenants with
//        nominal quotas lending at most 30%: simulated seconds per wall second
//        (`sim_speedup`, target >= 1,000, i.e. under ~4.3 minutes).
//  10k: the same trace shape on 10,000 nodes (durations scaled to the same load):
//        `sim_speedup_10k` (shown).
// Prints the passes, the time inside Plan and the rest (event handling, accounting), and
// ends with one JSON line (keys in DESIGN.md "Benchmarks").
//   baton-bench-sim [--jobs=100000] [--days=3] [--skip-10k]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
  uint64_t passes = 0, evictions = 0, finished = 0, jobs = 0;
  double utilisation = 0;
};

Result RunOnce(uint32_t nodes, uint64_t jobs, double days) {
  SyntheticOptions o;
  o.jobs = jobs;
  o.days = days;
  o.seed = 42;
  o.tenants = kTenants;
  o.cluster_gpus = nodes * 8 * 9 / 10;
  o.load = 0.85;
  o.max_gang_nodes = 32;
  o.services = nodes / 50;
  o.base_replicas = 2;
  o.peak_replicas = 4;
  std::vector<TraceJob> trace = GenerateTrace(o);
  std::vector<sched::NodeInfo> cluster = Cluster(nodes);
  Policy policy = BenchPolicy(nodes);
  SimOptions options;
  options.sample_interval_ms = 300'000;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Simulator> sim =
      SimulateTrace(cluster, policy, trace, options, /*drain_ms=*/7ll * 24 * 3600 * 1000);
  Result r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.simulated_s = static_cast<double>(sim->now() - sim->start()) / 1000;
  r.plan_s = sim->plan_seconds();
  r.passes = sim->passes();
  r.evictions = sim->evictions();
  r.jobs = sim->jobs().size();
  for (const auto& [id, j] : sim->jobs()) r.finished += j.finished;
  r.utilisation = Summarize(*sim)["all"]["utilisation"].get<double>();
  return r;
}

void Print(const char* name, uint32_t nodes, const Result& r) {
  std::printf(
      "%s: %u nodes, %llu jobs: %.0f simulated s in %.1f wall s = %.0fx real time; "
      "%llu passes (%.2f ms each in Plan, %.1f s outside Plan), %llu evictions, %llu finished, "
      "utilisation %.1f%%\n",
      name, nodes, static_cast<unsigned long long>(r.jobs), r.simulated_s, r.wall_s,
      r.simulated_s / r.wall_s, static_cast<unsigned long long>(r.passes),
      r.passes ? r.plan_s * 1000 / r.passes : 0, r.wall_s - r.plan_s,
      static_cast<unsigned long long>(r.evictions), static_cast<unsigned long long>(r.finished),
      r.utilisation * 100);
  std::fflush(stdout);
}

}  // namespace
}  // namespace baton::sim

int main(int argc, char** argv) {
  uint64_t jobs = 100'000;
  double days = 3;
  bool skip_10k = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--jobs=", 7) == 0) jobs = std::strtoull(argv[i] + 7, nullptr, 10);
    if (std::strncmp(argv[i], "--days=", 7) == 0) days = std::strtod(argv[i] + 7, nullptr);
    if (std::strcmp(argv[i], "--skip-10k") == 0) skip_10k = true;
  }
  baton::sim::Result small = baton::sim::RunOnce(1000, jobs, days);
  baton::sim::Print("1k", 1000, small);
  double speedup = small.simulated_s / small.wall_s, speedup_10k = 0;
  if (!skip_10k) {
    baton::sim::Result large = baton::sim::RunOnce(10'000, jobs, days);
    baton::sim::Print("10k", 10'000, large);
    speedup_10k = large.simulated_s / large.wall_s;
  }
  std::printf("{\"sim_speedup\": %.1f, \"sim_speedup_10k\": %.1f}\n", speedup, speedup_10k);
  return 0;
}
