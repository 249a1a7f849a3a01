// baton-bench-restart: what a coordinator outage costs running work. On a 3-node x 2-GPU
// namespace cluster a train_mlp gang (2 nodes) and an inference service (1 node) run; the
// coordinator is kill -9'ed, stays away --outage-s (default 60), and is started again;
// the gang trains to its end. Per round: the jobs the outage killed (a new attempt, or not
// ending as they should), the seconds of work to redo (a replaced attempt's time since its
// last checkpoint, the service's silences beyond 2 s), and, as the physical reference, the
// longest silence of a training rank and of the service against their 1-s heartbeat.
// Keys: jobs_killed_by_coordinator_outage (summed; target 0), work_lost_s_by_outage
// (summed; target 0). Needs root (namespace cluster).
// Then restart time against history: a coordinator on a loopback cluster with no agents is
// kill -9'ed and started again, on an empty store and on one holding --history-jobs
// finished jobs (default 1,000,000, five events each, written directly by the generator
// the tests use); `restart_s_*` is from the new process's start to the first answered
// `baton status` of an old job (median of --restart-reps, default 3; 0 skips), beside
// the same for the empty store (restart_s_empty, the peer: process start, TLS, the CLI).
// Target: at most 2 s. load_all_history_s: reading every stored job and event into memory, as
// start-up did before it loaded only unfinished work.
// Then memory and restart against pending work: the same coordinator's resident memory
// (VmRSS, settled) on an empty store and on one holding --pending-jobs pending jobs of a
// typical spec (default 1,000,000: ten env vars, a five-word command; WritePendingJobs),
// rss_bytes_per_pending_job being the difference per job (target <= 2,048), and
// restart_s_1m_pending, kill -9 to a pending job's status answered (target <= 10 s). --outage-s=0
// skips the outage rounds. Then a launch storm: a production-like coordinator (heartbeats every 100
// ms) and one agent with its isolation on; --storm-attempts (default 200) jobs of `sleep 5` are
// submitted at once, all fitting the node; heartbeat_ack_p99_ms_launch_storm is the p99
// of the agent's heartbeat round trips (its baton_agent_heartbeat_ack_seconds histogram,
// interpolated within a bucket as Prometheus' histogram_quantile does) from the first
// submit until every job has succeeded, beside the same agent idle for 10 s before
// (heartbeat_ack_p99_ms_idle, the peer). Target: at most 50 ms. --storm-attempts=0 skips it.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_flags.h"
#include "bench/daemons.h"
#include "coordinator/store.h"
#include "tests/integration/local_cluster.h"
#include "tests/integration/outage_scenario.h"
#include "tests/util/history.h"
#include "tests/util/temp_dir.h"

namespace {

using namespace baton::testing;  // NOLINT: the test cluster's helpers
using baton::bench::RssBytes;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// kill -9, then the seconds from the new coordinator's start until `baton status job`
// answers (-1 if it never does within `limit_s`).
double CrashRestart(LocalCluster& cluster, uint64_t job, double limit_s = 60) {
  cluster.KillCoordinator(SIGKILL);
  const auto began = std::chrono::steady_clock::now();
  cluster.StartCoordinator();
  while (Seconds(began) < limit_s) {
    if (cluster.GetJob(job)) return Seconds(began);
  }
  return -1;
}

// Median restart seconds after `reps` crashes on a store holding `history` finished jobs.
// `load_all_s` (with history): the seconds to read all of it into memory, once.
double RestartSeconds(uint64_t history, int reps, double* load_all_s = nullptr) {
  LocalCluster cluster(/*agents=*/0, /*gpus=*/0);
  uint64_t job = 0;
  if (history > 0) {
    cluster.KillCoordinator(SIGKILL);
    const auto began = std::chrono::steady_clock::now();
    {
      baton::StoreOptions bulk;
      bulk.bulk = true;
      auto store = baton::Store::Open(cluster.dir() + "/coordinator", bulk);
      if (!store.ok()) {
        std::fprintf(stderr, "baton-bench-restart: %s\n", store.status().ToString().c_str());
        return -1;
      }
      HistoryOptions options;
      options.jobs = history;
      if (absl::Status s = WriteFinishedHistory(**store, options); !s.ok()) {
        std::fprintf(stderr, "baton-bench-restart: %s\n", s.ToString().c_str());
        return -1;
      }
    }
    std::printf("wrote %llu finished jobs and %llu events in %.1f s\n",
                static_cast<unsigned long long>(history),
                static_cast<unsigned long long>(history * 5), Seconds(began));
    cluster.StartCoordinator();  // its first start compacts what the generator wrote
    job = history / 2;
    if (!cluster.GetJob(job)) {
      std::fprintf(stderr, "baton-bench-restart: job %llu is not served\n",
                   static_cast<unsigned long long>(job));
      return -1;
    }
  } else {
    CommandResult submitted = cluster.Baton({"submit", "-q", "--", "true"});
    job = submitted.exit_code == 0 ? ClusterClient::SubmittedId(submitted.out) : 0;
    if (job == 0) {
      std::fprintf(stderr, "baton-bench-restart: submit: %s\n", submitted.err.c_str());
      return -1;
    }
  }
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    double s = CrashRestart(cluster, job);
    std::printf("restart with %llu finished jobs: %.3f s\n",
                static_cast<unsigned long long>(history), s);
    if (s < 0) return -1;
    seconds.push_back(s);
  }
  if (history > 0 && load_all_s != nullptr) {
    // What start-up cost before it loaded only live work: every job record and every
    // event parsed into memory (the store read as the previous Load read it).
    cluster.KillCoordinator(SIGKILL);
    auto store = baton::Store::Open(cluster.dir() + "/coordinator", {});
    if (store.ok()) {
      const auto began = std::chrono::steady_clock::now();
      std::vector<baton::v1::Job> jobs;
      absl::Status scanned = (*store)->ScanFinished(0, [&](baton::v1::Job job) {
        jobs.push_back(std::move(job));
        return true;
      });
      auto events = (*store)->ReadLog(baton::LogQuery{});
      if (scanned.ok() && events.ok()) {
        *load_all_s = Seconds(began);
        std::printf("reading all history (%zu jobs, %zu events) into memory: %.3f s\n", jobs.size(),
                    events->size(), *load_all_s);
      }
    }
  }
  return Median(seconds);
}

struct PendingFigures {
  double restart_s = -1;      // median kill -9 -> status of a pending job answered
  double first_start_s = -1;  // the first start on the generated store (compacts it too)
  uint64_t rss_empty = 0, rss_pending = 0;  // the coordinator's, settled, without / with them
  double rss_per_job = 0;
};

// A coordinator with no agents: its resident memory settled on an empty store, then on one
// holding `pending` pending jobs of a typical spec (WritePendingJobs), and its restart time
// with them (median of `reps` kill -9s).
PendingFigures PendingRestart(uint64_t pending, int reps) {
  PendingFigures out;
  LocalCluster cluster(/*agents=*/0, /*gpus=*/0);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // a few passes, a settled heap
  out.rss_empty = RssBytes(cluster.CoordinatorPid());
  cluster.KillCoordinator(SIGKILL);
  auto began = std::chrono::steady_clock::now();
  {
    baton::StoreOptions bulk;
    bulk.bulk = true;
    auto store = baton::Store::Open(cluster.dir() + "/coordinator", bulk);
    PendingOptions options;
    options.jobs = pending;
    absl::Status s = store.ok() ? WritePendingJobs(**store, options) : store.status();
    if (!s.ok()) {
      std::fprintf(stderr, "baton-bench-restart: %s\n", s.ToString().c_str());
      return out;
    }
  }
  std::printf("wrote %llu pending jobs in %.1f s\n", static_cast<unsigned long long>(pending),
              Seconds(began));
  began = std::chrono::steady_clock::now();
  cluster.StartCoordinator();
  const uint64_t job = pending / 2;
  while (Seconds(began) < 300 && !cluster.GetJob(job)) {
  }
  out.first_start_s = Seconds(began);
  if (!cluster.GetJob(job)) {
    std::fprintf(stderr, "baton-bench-restart: pending job %llu is not served\n",
                 static_cast<unsigned long long>(job));
    return out;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  out.rss_pending = RssBytes(cluster.CoordinatorPid());
  out.rss_per_job =
      (static_cast<double>(out.rss_pending) - static_cast<double>(out.rss_empty)) / pending;
  std::printf(
      "coordinator RSS: %.1f MiB empty, %.1f MiB with %llu pending jobs: %.0f bytes per "
      "pending job (target <= 2048); first start %.2f s\n",
      out.rss_empty / 1048576.0, out.rss_pending / 1048576.0,
      static_cast<unsigned long long>(pending), out.rss_per_job, out.first_start_s);
  std::vector<double> seconds;
  for (int i = 0; i < reps; ++i) {
    double s = CrashRestart(cluster, job, /*limit_s=*/300);
    std::printf("restart with %llu pending jobs: %.3f s\n",
                static_cast<unsigned long long>(pending), s);
    if (s < 0) return out;
    seconds.push_back(s);
  }
  out.restart_s = Median(seconds);
  return out;
}

// Cumulative counts of histogram `name`'s buckets by upper bound, from a Prometheus text
// exposition.
std::map<double, double> Buckets(const std::string& text, const std::string& name) {
  std::map<double, double> out;
  std::istringstream in(text);
  std::string line;
  const std::string prefix = name + "_bucket{";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    size_t le = line.find("le=\"");
    size_t close = line.find('}');
    if (le == std::string::npos || close == std::string::npos) continue;
    std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    out[bound == "+Inf" ? INFINITY : std::strtod(bound.c_str(), nullptr)] =
        std::strtod(line.c_str() + close + 1, nullptr);
  }
  return out;
}

// The q-quantile of the samples that arrived between two scrapes, linear within its
// bucket (histogram_quantile's rule); -1 without samples. `count` gets how many arrived.
double QuantileBetween(const std::map<double, double>& before,
                       const std::map<double, double>& after, double q, double* count) {
  auto at = [](const std::map<double, double>& m, double le) {
    auto it = m.find(le);
    return it == m.end() ? 0.0 : it->second;
  };
  double total = at(after, INFINITY) - at(before, INFINITY);
  *count = total;
  if (total <= 0) return -1;
  double rank = q * total, prev_le = 0, prev_count = 0;
  for (const auto& [le, cumulative] : after) {
    double c = cumulative - at(before, le);
    if (c >= rank) {
      if (std::isinf(le)) return prev_le;
      return prev_le + (le - prev_le) * (rank - prev_count) / std::max(1e-9, c - prev_count);
    }
    prev_le = le;
    prev_count = c;
  }
  return prev_le;
}

struct StormResult {
  double idle_p99_ms = -1, storm_p99_ms = -1;
  double idle_acks = 0, storm_acks = 0;
  double storm_s = 0;
  std::string error;
};

// One agent with its isolation on takes `attempts` jobs at once (see the top).
StormResult LaunchStorm(int attempts) {
  StormResult r;
  TempDir dir("baton-bench-storm");
  baton::bench::Daemons d(dir.path());
  const std::string target = d.StartCoordinator({"--heartbeat", "100ms"});
  const std::string ready = dir.path() + "/storm1.metrics";
  std::filesystem::create_directories(dir.path() + "/storm1");
  d.StartAgent(target, "storm1",
               {"--metrics-listen", "127.0.0.1:0", "--metrics-ready-file", ready});
  baton::bench::Api api = baton::bench::Stub(d, target, d.Token());
  bool up = WaitFor(
      [&] {
        grpc::ClientContext ctx;
        api.Prepare(&ctx);
        baton::v1::ListNodesResponse resp;
        return api.stub->ListNodes(&ctx, baton::v1::ListNodesRequest(), &resp).ok() &&
               resp.nodes_size() == 1 && !ReadFile(ready).empty();
      },
      std::chrono::seconds(30));
  if (!up) {
    r.error = "the agent did not register or serve its metrics";
    return r;
  }
  std::string addr = ReadFile(ready);
  addr = addr.substr(0, addr.find('\n'));
  httplib::Client metrics("127.0.0.1", std::atoi(addr.substr(addr.rfind(':') + 1).c_str()));
  auto scrape = [&] {
    auto res = metrics.Get("/metrics");
    return Buckets(res && res->status == 200 ? res->body : "", "baton_agent_heartbeat_ack_seconds");
  };
  auto idle_from = scrape();
  std::this_thread::sleep_for(std::chrono::seconds(10));
  auto storm_from = scrape();
  r.idle_p99_ms = 1000 * QuantileBetween(idle_from, storm_from, 0.99, &r.idle_acks);

  baton::v1::JobSpec spec;
  spec.add_command("sleep");
  spec.add_command("5");
  spec.set_cpu_millis_per_node(8);  // 200 fit in 2 CPUs
  spec.set_memory_bytes_per_node(32 << 20);
  spec.set_restart_policy(baton::v1::RESTART_POLICY_NEVER);
  const auto began = std::chrono::steady_clock::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&] {
      uint64_t id;
      while (next++ < attempts) failed += !baton::bench::Call(api, spec, &id).ok();
    });
  }
  for (auto& t : pool) t.join();
  if (failed > 0) {
    r.error = std::to_string(failed.load()) + " submits failed";
    return r;
  }
  // Polled cheaply: a listing of every finished job at each poll would load the
  // coordinator whose heartbeat acks are being measured.
  if (!WaitFor([&] { return baton::bench::NoneUnfinished(api).value_or(false); },
               std::chrono::seconds(300))) {
    r.error = "the storm's jobs did not all end within 300 s";
    return r;
  }
  r.storm_s = Seconds(began);
  r.storm_p99_ms = 1000 * QuantileBetween(storm_from, scrape(), 0.99, &r.storm_acks);
  if (baton::bench::CountSucceeded(api) < static_cast<size_t>(attempts)) {
    r.error = "not every storm job succeeded";
    return r;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-restart", "coordinator outage, restart and launch storm");
  opts.add_options()("reps", "outage rounds", cxxopts::value<int>()->default_value("1"))(
      "outage-s", "how long the coordinator stays away (0: no outage rounds)",
      cxxopts::value<int>()->default_value("60"))("restart-reps",
                                                  "restarts timed per store (0: none)",
                                                  cxxopts::value<int>()->default_value("3"))(
      "history-jobs", "finished jobs in the large store",
      cxxopts::value<int64_t>()->default_value("1000000"))(
      "storm-attempts", "jobs in the launch storm (0: none)",
      cxxopts::value<int>()->default_value("200"))(
      "pending-jobs", "pending jobs in the store of the memory and restart round (0: none)",
      cxxopts::value<int64_t>()->default_value("1000000"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  using baton::bench::FlagAtLeast;
  int reps = FlagAtLeast(opts, flags, "reps", 1);
  const int outage_s = FlagAtLeast(opts, flags, "outage-s", 0);
  const int restart_reps = FlagAtLeast(opts, flags, "restart-reps", 0);
  const int storm_attempts = FlagAtLeast(opts, flags, "storm-attempts", 0);
  const auto history = static_cast<uint64_t>(FlagAtLeast<int64_t>(opts, flags, "history-jobs", 0));
  const auto pending = static_cast<uint64_t>(FlagAtLeast<int64_t>(opts, flags, "pending-jobs", 0));
  PendingFigures pend;
  if (pending > 0 && restart_reps > 0) {
    pend = PendingRestart(pending, restart_reps);
    std::printf(
        "restart (kill -9 -> status answered) with %llu pending jobs, median of %d: "
        "%.3f s (target <= 10 s)\n",
        static_cast<unsigned long long>(pending), restart_reps, pend.restart_s);
  }
  StormResult storm;
  if (storm_attempts > 0) {
    storm = LaunchStorm(storm_attempts);
    if (!storm.error.empty()) {
      std::fprintf(stderr, "baton-bench-restart: launch storm: %s\n", storm.error.c_str());
      return 1;
    }
    std::printf(
        "launch storm: %d jobs on one agent done in %.1f s; heartbeat ack p99 %.1f ms over %.0f "
        "heartbeats (idle before: %.1f ms over %.0f; target <= 50 ms)\n",
        storm_attempts, storm.storm_s, storm.storm_p99_ms, storm.storm_acks, storm.idle_p99_ms,
        storm.idle_acks);
  }
  // --restart-reps=0 skips the restart rounds (their keys are then 0).
  const double restart_empty = restart_reps > 0 ? RestartSeconds(0, restart_reps) : 0;
  double load_all_s = 0;
  const double restart_history =
      restart_reps > 0 ? RestartSeconds(history, restart_reps, &load_all_s) : 0;
  std::printf(
      "restart (kill -9 -> status answered), median of %d: empty %.3f s, %llu finished "
      "jobs %.3f s (target <= 2 s)\n",
      restart_reps, restart_empty, static_cast<unsigned long long>(history), restart_history);
  if (outage_s == 0) reps = 0;
  int killed = 0;
  double lost_s = 0;
  std::vector<double> training_gap_ms, service_gap_ms;
  for (int i = 0; i < reps; ++i) {
    TempDir dir("baton-bench-restart");
    MakeShared(dir.path());  // the jobs (test users') write here
    const std::string policy = dir.Sub("policy.yaml");
    std::FILE* f = std::fopen(policy.c_str(), "w");
    if (f == nullptr) return 1;
    std::fprintf(f,
                 "classes:\n"
                 "  - {name: inference, value: 900, service: true, tenants: [serving]}\n"
                 "  - {name: training, value: 300}\n%s",
                 TestPolicyAccess().c_str());
    std::fclose(f);
    NetnsCluster cluster(/*nodes=*/3, /*gpus=*/2, "--policy " + policy, "br");
    if (!cluster.ok()) {
      std::fprintf(stderr, "baton-bench-restart: %s\n", cluster.why().c_str());
      return 1;
    }
    const OutageReport r =
        RunCoordinatorOutage(cluster, dir.path(), std::chrono::seconds(outage_s));
    if (!r.error.empty()) {
      std::fprintf(stderr, "baton-bench-restart: round %d: %s\n", i, r.error.c_str());
      return 1;
    }
    std::printf(
        "round %d: coordinator away %.1f s; jobs killed %d; work lost %.1f s; longest "
        "silence: training rank %lld ms, service %lld ms (heartbeat 1000 ms)\n",
        i, (r.up_ms - r.down_ms) / 1000.0, r.jobs_killed, r.work_lost_s,
        static_cast<long long>(r.training_max_gap_ms),
        static_cast<long long>(r.service_max_gap_ms));
    killed += r.jobs_killed;
    lost_s += r.work_lost_s;
    training_gap_ms.push_back(r.training_max_gap_ms);
    service_gap_ms.push_back(r.service_max_gap_ms);
    cluster.Baton({"cancel", std::to_string(r.service)}, kRoot);
  }
  const double tgap = Median(training_gap_ms), sgap = Median(service_gap_ms);
  std::printf("%d outage(s) of %d s: %d job(s) killed, %.1f s of work lost (targets 0, 0)\n", reps,
              outage_s, killed, lost_s);
  std::printf("longest silence / heartbeat period (median): training %.2f, service %.2f\n",
              tgap / 1000.0, sgap / 1000.0);
  std::printf(
      "{\"jobs_killed_by_coordinator_outage\": %d, \"work_lost_s_by_outage\": %.1f, "
      "\"outage_s\": %d, \"training_max_silence_ratio\": %.2f, "
      "\"service_max_silence_ratio\": %.2f, \"rounds\": %d, "
      "\"restart_s_1m_finished_jobs\": %.3f, \"restart_s_empty\": %.3f, "
      "\"restart_history_jobs\": %llu, \"restart_vs_empty\": %.2f, "
      "\"load_all_history_s\": %.3f, \"heartbeat_ack_p99_ms_launch_storm\": %.1f, "
      "\"heartbeat_ack_p99_ms_idle\": %.1f, \"launch_storm_attempts\": %d, "
      "\"launch_storm_s\": %.1f, \"restart_s_1m_pending\": %.3f, "
      "\"rss_bytes_per_pending_job\": %.0f, \"rss_bytes_empty\": %llu, "
      "\"rss_bytes_pending\": %llu, \"pending_jobs\": %llu, \"first_start_s_pending\": %.3f}\n",
      killed, lost_s, outage_s, tgap / 1000.0, sgap / 1000.0, reps, restart_history, restart_empty,
      static_cast<unsigned long long>(history),
      restart_empty > 0 ? restart_history / restart_empty : 0.0, load_all_s, storm.storm_p99_ms,
      storm.idle_p99_ms, storm_attempts, storm.storm_s, pend.restart_s, pend.rss_per_job,
      static_cast<unsigned long long>(pend.rss_empty),
      static_cast<unsigned long long>(pend.rss_pending), static_cast<unsigned long long>(pending),
      pend.first_start_s);
  return 0;
}
