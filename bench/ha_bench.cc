// baton-bench-ha: what losing the leading coordinator costs (docs/ha.md). Three replicas
// on a three-member etcd on loopback (etcd's data on tmpfs; run with TMPDIR=/dev/shm for
// the replicas' too), two agents running two one-GPU jobs, --pending jobs queued first;
// then, --reps times, the leader is kill -9'ed while three threads submit through the
// replica list, and the killed replica is started again as a standby.
// failover_s_kill9: the kill to the acknowledgement of the first submit made after it
// (median of the reps), with the default --ha-ttl 5s; failover_s_kill9_ttl2: the same on a cluster
// with
// --ha-ttl 2s. The lease is the floor: a standby may take over only once the dead
// leader's lease has lapsed, so each figure is also shown against its TTL
// (failover_vs_ttl*). handover_s_step_down: `baton admin ha step-down`, the whole CLI call
// (which waits until another replica answers as leader), median over both clusters' reps.
// lost_acknowledged_submits, duplicate_jobs and jobs_restarted_by_failover are summed
// over every rep (target 0).
// api_submits_per_s_ha: durable submits through the API (service token, TLS), --api-threads
// calls in flight (gRPC's callback API, ApiSubmitRun in daemons.h), to three fresh replicas on a
// three-member etcd with TLS, against api_submits_per_s_single: the same load on one coordinator
// alone (same TLS, token, policy and tmpfs), interleaved three times; ha_vs_single_submit_rate =
// the medians' ratio. --api-only runs this phase alone.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_flags.h"
#include "bench/daemons.h"
#include "tests/integration/ha_cluster.h"
#include "tests/util/temp_dir.h"

namespace {

using namespace baton::testing;  // NOLINT: the test cluster's helpers

struct Round {
  std::vector<double> failover_s;
  std::vector<double> handover_s;  // `baton admin ha step-down`: the call to the next leader
  size_t lost = 0, duplicates = 0, restarted = 0, acked = 0;
  bool ok = true;
};

// Queues `n` pending jobs through the replica list from 8 threads.
size_t Preload(HaCluster& c, int n) {
  std::atomic<int> next{0};
  std::atomic<size_t> done{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&] {
      while (next++ < n) {
        CommandResult r = c.Baton({"submit", "-q", "--gpus", "2", "--", "sleep", "1"});
        if (r.exit_code == 0) ++done;
      }
    });
  }
  for (auto& th : pool) th.join();
  return done.load();
}

Round Run(const std::string& ttl, int pending, int reps) {
  Round out;
  HaCluster c(/*replicas=*/3, /*agents=*/2, ttl, /*etcd_members=*/3);
  std::string why;
  if (!c.ok() || !c.StartRunningJobs(2, &why)) {
    std::fprintf(stderr, "ha bench (ttl %s): cluster did not come up: %s %s\n", ttl.c_str(),
                 c.why().c_str(), why.c_str());
    out.ok = false;
    return out;
  }
  size_t queued = Preload(c, pending);
  std::printf("ttl %s: %zu pending jobs queued\n", ttl.c_str(), queued);
  for (int rep = 0; rep < reps; ++rep) {
    FailoverResult r = c.KillLeaderUnderSubmits(/*threads=*/3, std::chrono::milliseconds(2000),
                                                /*after=*/10, /*api_threads=*/0);
    std::printf(
        "ttl %s rep %d: replica %d killed, %d leads; failover %.2f s; %zu submits acknowledged "
        "(%zu before the kill), %zu failed; lost %zu, duplicates %zu, restarted %zu %s\n",
        ttl.c_str(), rep + 1, r.old_leader, r.new_leader, r.failover_s, r.acked,
        r.acked_before_kill, r.failed, r.lost, r.duplicates, r.restarted, r.detail.c_str());
    if (r.failover_s < 0) out.ok = false;
    out.failover_s.push_back(r.failover_s);
    out.lost += r.lost;
    out.duplicates += r.duplicates;
    out.restarted += r.restarted;
    out.acked += r.acked;
    // Let the restarted replica catch up before the next kill.
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  for (int rep = 0; rep < reps; ++rep) {
    auto began = std::chrono::steady_clock::now();
    CommandResult r = c.Baton({"admin", "ha", "step-down", "--timeout", "30s"}, kRoot);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::printf("ttl %s step-down %d: %s%.2f s (the whole CLI call)\n", ttl.c_str(), rep + 1,
                r.exit_code == 0 ? "" : ("FAILED " + r.err + " ").c_str(), s);
    if (r.exit_code != 0) out.ok = false;
    out.handover_s.push_back(s);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

struct ApiRates {
  std::vector<double> single, ha;
  bool ok = true;
};

// Durable API submits: one coordinator, then three replicas, each repetition on fresh
// daemons (the replicas on a prefix of their own in one etcd), interleaved.
ApiRates RunApi(int reps, int threads, double seconds) {
  ApiRates out;
  EtcdCluster etcd(3, /*tls=*/true);
  if (!etcd.ok()) {
    std::fprintf(stderr, "ha bench: etcd did not come up: %s\n", etcd.why().c_str());
    out.ok = false;
    return out;
  }
  const std::string pki = etcd.pki_dir();
  TempDir dir("baton-bench-ha-api");
  for (int rep = 0; rep < reps; ++rep) {
    const std::string n = std::to_string(rep);
    double single = 0, ha = 0;
    {
      baton::bench::Daemons d(dir.path() + "/single" + n);
      std::string target = d.StartCoordinator();
      single = baton::bench::ApiSubmits(d, target, threads, seconds);
    }
    {
      baton::bench::Daemons d(dir.path() + "/ha" + n);
      std::string list;
      for (int i = 0; i < 3; ++i) {
        std::string name = "c" + std::to_string(i);
        list += (i ? "," : "") +
                d.StartCoordinator(
                    {"--ha-etcd", etcd.endpoints(), "--ha-prefix", "/api" + n, "--ha-name", name,
                     "--ha-etcd-ca", pki + "/ca.crt", "--ha-etcd-cert", pki + "/coordinator.crt",
                     "--ha-etcd-key", pki + "/coordinator.key"},
                    name);
      }
      d.SetTarget(list);
      ha = baton::bench::ApiSubmits(d, list, threads, seconds);
    }
    std::printf(
        "API submits, repetition %d (%d in flight, token + TLS, each durable): one "
        "coordinator %.0f /s, three replicas on etcd %.0f /s (%.3f)\n",
        rep + 1, threads, single, ha, single > 0 ? ha / single : 0);
    if (single <= 0 || ha <= 0) out.ok = false;
    out.single.push_back(single);
    out.ha.push_back(ha);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-ha", "coordinator failover under load (docs/ha.md)");
  opts.add_options()("pending", "jobs queued before the first kill",
                     cxxopts::value<int>()->default_value("10000"))(
      "reps", "leader kills per TTL", cxxopts::value<int>()->default_value("3"))(
      "api-threads", "API submits in flight at all times (the concurrent clients)",
      cxxopts::value<int>()->default_value("256"))("api-seconds", "each API submit run",
                                                   cxxopts::value<double>()->default_value("5"))(
      "api-only", "only the API submit phase (its keys alone in the JSON line)");
  auto r = baton::bench::ParseFlags(opts, argc, argv);
  int pending = baton::bench::FlagAtLeast(opts, r, "pending", 0);
  int reps = baton::bench::FlagAtLeast(opts, r, "reps", 1);
  int api_threads = baton::bench::FlagAtLeast(opts, r, "api-threads", 1);
  double api_seconds = r["api-seconds"].as<double>();
  if (!(api_seconds > 0)) baton::bench::BadFlags(opts, "--api-seconds must be above 0");
  ApiRates api = RunApi(3, api_threads, api_seconds);
  double api_ha = Median(api.ha), api_single = Median(api.single);
  char api_json[256];
  std::snprintf(api_json, sizeof api_json,
                "\"api_submits_per_s_ha\": %.1f, \"api_submits_per_s_single\": %.1f, "
                "\"ha_vs_single_submit_rate\": %.3f, \"api_threads\": %d, \"api_auth\": "
                "\"token+tls\"",
                api_ha, api_single, api_single > 0 ? api_ha / api_single : 0, api_threads);
  if (r.count("api-only")) {
    std::printf("{%s}\n", api_json);
    return api.ok ? 0 : 1;
  }
  Round five = Run("5s", pending, reps);
  Round two = Run("2s", pending, reps);
  double f5 = Median(five.failover_s), f2 = Median(two.failover_s);
  std::vector<double> handovers = five.handover_s;
  handovers.insert(handovers.end(), two.handover_s.begin(), two.handover_s.end());
  std::printf(
      "{\"failover_s_kill9\": %.3f, \"failover_s_kill9_ttl2\": %.3f, \"failover_vs_ttl\": %.3f, "
      "\"failover_vs_ttl2\": %.3f, \"handover_s_step_down\": %.3f, "
      "\"lost_acknowledged_submits\": %zu, \"duplicate_jobs\": %zu, "
      "\"jobs_restarted_by_failover\": %zu, \"acknowledged_submits\": %zu, \"pending_jobs\": %d, "
      "\"reps\": %d, \"replicas\": 3, \"etcd_members\": 3, %s}\n",
      f5, f2, f5 / 5, f2 / 2, Median(handovers), five.lost + two.lost,
      five.duplicates + two.duplicates, five.restarted + two.restarted, five.acked + two.acked,
      pending, reps, api_json);
  return five.ok && two.ok && api.ok ? 0 : 1;
}
