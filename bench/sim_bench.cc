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
//  sharing (issue 47): an openb-shaped workload (Alibaba's ATC'23 trace: 13% CPU-only pods,
//        38% asking for a fraction of one GPU, the rest whole GPUs) written as openb's pod
//        and node lists and converted by `baton-sim convert --from openb`'s code, on 200
//        nodes of 8 16Gi GPUs, arriving over 6 hours at about 1.2x the cluster; replayed
//        with 3 GPUs of each node as MPS pools and again with every fraction on a whole
//        GPU: `tasks_placed_shared_vs_whole` (tasks started within the 6 hours),
//        `stranded_gpu_fraction_shared` (pool capacity no waiting share fits, sampled each
//        minute), `pass_ms_shares_vs_whole` (mean time in Plan per pass).
// Prints the passes, the time inside Plan and the rest (event handling, accounting), and
// ends with one JSON line (keys in docs/benchmarks.md).
//   baton-bench-sim [--jobs=100000] [--days=3] [--skip-10k] [--topology-jobs=20000]
//                   [--sharing-tasks=8152]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "bench/bench_flags.h"
#include "coordinator/policy.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/generate.h"
#include "coordinator/sim/openb.h"
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

// The sharing round's workload as openb's two lists (seeded: the same every run).
std::pair<std::string, std::string> OpenbLists(uint64_t tasks) {
  constexpr uint32_t kNodes = 200;
  constexpr int64_t kSpan = 6 * 3600;  // arrivals over 6 hours
  std::mt19937_64 rng(47);
  auto draw = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  // openb's fractions, most at a half: 10, 20, 25, 30, 50, 60, 80%.
  const std::vector<std::pair<int, int>> fractions = {{100, 10}, {200, 10}, {250, 15}, {300, 10},
                                                      {500, 40}, {600, 5},  {800, 10}};
  std::string pods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  for (uint64_t i = 0; i < tasks; ++i) {
    const uint64_t kind = draw(0, 999);  // 133 CPU-only, 378 fractional, the rest whole
    int gpus = 0, milli = 0;
    if (kind >= 133 && kind < 511) {
      uint64_t w = draw(0, 99);
      for (const auto& [m, weight] : fractions) {
        if (w < static_cast<uint64_t>(weight)) {
          milli = m;
          break;
        }
        w -= weight;
      }
      gpus = 1;
    } else if (kind >= 511) {
      const uint64_t g = draw(0, 99);
      gpus = g < 80 ? 1 : g < 92 ? 2 : g < 98 ? 4 : 8;
      milli = 1000;
    }
    const int64_t created = static_cast<int64_t>(draw(0, kSpan));
    // Lasting 30 minutes to 6 hours (mean ~2.5 h): with the arrivals, ~1.2x the cluster.
    const int64_t lasts = static_cast<int64_t>(1800 + draw(0, 19800));
    const std::string qos = gpus > 0 && draw(0, 1) ? "LS" : "BE";
    pods += "p" + std::to_string(i) + "," + std::to_string(1000 * draw(1, 8)) + "," +
            std::to_string(1024 * draw(1, 32)) + "," + std::to_string(gpus) + "," +
            std::to_string(milli) + ",V100M16," + qos + ",Running," + std::to_string(created) +
            "," + std::to_string(created + lasts) + "," + std::to_string(created) + "\n";
  }
  std::string nodes = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (uint32_t i = 0; i < kNodes; ++i) {
    nodes += "n" + std::to_string(i) + ",96000,786432,8,V100M16\n";
  }
  return {pods, nodes};
}

// One sharing replay, ready to run: the workload converted with or without shares.
std::unique_ptr<Simulator> SharingSim(const std::string& pods, const std::string& nodes,
                                      bool shares) {
  OpenbOptions o;
  o.shares = shares;
  o.mps_gpus = shares ? 3 : 0;
  o.users = 1;
  absl::StatusOr<OpenbTrace> trace = ConvertOpenbPods(pods, "openb-pods", o);
  absl::StatusOr<std::vector<sched::NodeInfo>> cluster =
      ParseClusterFile(*ConvertOpenbNodes(nodes, "openb-nodes", o), "openb-cluster");
  if (!trace.ok() || !cluster.ok()) {
    std::fprintf(stderr, "sharing round: %s %s\n", trace.status().ToString().c_str(),
                 cluster.status().ToString().c_str());
    std::exit(1);
  }
  Policy policy = Policy::Default();
  for (sched::PriorityClass& c : policy.classes) {
    if (c.name == "inference") c.gpu_sharing = "mps";
  }
  SimOptions options;
  options.grace_ms = Time{policy.default_grace_seconds} * 1000;
  options.sample_interval_ms = 60'000;
  auto sim = std::make_unique<Simulator>(*cluster, policy, options);
  PoolTolerations tolerations = TolerationsByPool(*cluster, policy.default_pool);
  for (const TraceJob& j : trace->jobs) sim->Submit(ToPending(j, policy, tolerations), WorkOf(j));
  return sim;
}

// A replay's figures: tasks started within the arrivals' 6 hours, stranded pool capacity,
// time in Plan per pass and per job in its view.
nlohmann::json SharingFigures(const Simulator& s) {
  nlohmann::json out = Summarize(s)["mps"];
  out["pass_ms"] = s.plans() ? s.plan_seconds() * 1000 / static_cast<double>(s.plans()) : 0;
  out["plans"] = s.plans();
  out["view_jobs"] = s.plans() ? static_cast<double>(s.plan_view_jobs()) / s.plans() : 0;
  // Plan's time per job in its view (µs): with pools more jobs run, and every pass reads them.
  out["us_per_view_job"] =
      s.plan_view_jobs() ? s.plan_seconds() * 1e6 / static_cast<double>(s.plan_view_jobs()) : 0;
  return out;
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
                                              cxxopts::value<int64_t>()->default_value("20000"))(
      "sharing-tasks", "tasks in the sharing round's openb-shaped workload (0: skip it)",
      cxxopts::value<int64_t>()->default_value("8152"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  const auto jobs =
      static_cast<uint64_t>(baton::bench::FlagAtLeast<int64_t>(opts, flags, "jobs", 1));
  const double days = flags["days"].as<double>();
  if (!(days > 0)) baton::bench::BadFlags(opts, "--days must be above 0");
  const bool skip_10k = flags.count("skip-10k") > 0;
  const auto tree_jobs = baton::bench::FlagAtLeast<int64_t>(opts, flags, "topology-jobs", 0);
  const auto sharing_tasks = baton::bench::FlagAtLeast<int64_t>(opts, flags, "sharing-tasks", 0);
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
  double placed_ratio = 0, stranded = 0, pass_ratio = 0;
  if (sharing_tasks > 0) {
    // Both replays advance together, ten simulated minutes at a time, so that each side's
    // time in Plan is measured under the same machine conditions (interleaved).
    const auto [pods, nodes] = baton::sim::OpenbLists(static_cast<uint64_t>(sharing_tasks));
    auto with = baton::sim::SharingSim(pods, nodes, true);
    auto without = baton::sim::SharingSim(pods, nodes, false);
    for (baton::sim::Time t = 0; t <= 6 * 3'600'000; t += 600'000) {
      with->RunUntil(t);
      without->RunUntil(t);
    }
    nlohmann::json shared = baton::sim::SharingFigures(*with);
    nlohmann::json whole = baton::sim::SharingFigures(*without);
    auto line = [](const char* name, const nlohmann::json& r) {
      std::printf(
          "sharing %s: %llu of %llu tasks started within the 6 hours (%llu of %llu shares), "
          "stranded pool capacity %.2f%%, %.2f ms per pass in Plan over %llu passes (%.0f "
          "jobs in view on average, %.3f us per job in view)\n",
          name, static_cast<unsigned long long>(r["tasks_placed"].get<uint64_t>()),
          static_cast<unsigned long long>(r["tasks"].get<uint64_t>()),
          static_cast<unsigned long long>(r["shares_placed"].get<uint64_t>()),
          static_cast<unsigned long long>(r["shares"].get<uint64_t>()),
          r["stranded_gpu_fraction"].get<double>() * 100, r["pass_ms"].get<double>(),
          static_cast<unsigned long long>(r["plans"].get<uint64_t>()), r["view_jobs"].get<double>(),
          r["us_per_view_job"].get<double>());
    };
    line("(3 of 8 GPUs MPS pools)", shared);
    line("(every fraction on a whole GPU)", whole);
    const double whole_placed = static_cast<double>(whole["tasks_placed"].get<uint64_t>());
    placed_ratio = whole_placed > 0 ? shared["tasks_placed"].get<uint64_t>() / whole_placed : 0;
    stranded = shared["stranded_gpu_fraction"].get<double>();
    // Per job in the view: the share run holds more jobs running, and a pass reads each.
    const double whole_us = whole["us_per_view_job"].get<double>();
    pass_ratio = whole_us > 0 ? shared["us_per_view_job"].get<double>() / whole_us : 0;
  }
  std::printf(
      "{\"sim_speedup\": %.1f, \"sim_speedup_10k\": %.1f, \"spread_gangs_fraction\": %.4f, "
      "\"gang_wait_p95_topology_vs_plain\": %.3f, \"gang_jct_mean_topology_vs_plain\": %.3f, "
      "\"tasks_placed_shared_vs_whole\": %.3f, \"stranded_gpu_fraction_shared\": %.4f, "
      "\"pass_ms_shares_vs_whole\": %.3f}\n",
      speedup, speedup_10k, spread, wait_ratio, jct_ratio, placed_ratio, stranded, pass_ratio);
  return 0;
}
