// baton-bench-restart: what a coordinator outage costs running work. On a 3-node x 2-GPU
// namespace cluster a train_mlp gang (2 nodes) and an inference service (1 node) run; the
// coordinator is kill -9'ed, stays away --outage-s (default 60), and is started again;
// the gang trains to its end. Per round: the jobs the outage killed (a new attempt, or not
// ending as they should), the seconds of work to redo (a replaced attempt's time since its
// last checkpoint, the service's silences beyond 2 s), and, as the physical reference, the
// longest silence of a training rank and of the service against their 1-s heartbeat.
// Keys: jobs_killed_by_coordinator_outage (summed; target 0), work_lost_s_by_outage
// (summed; target 0). Needs root (namespace cluster). The other keys once planned for
// it (restart_s_*, heartbeat_ack_p99_ms_launch_storm) are not measured (docs/benchmarks.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/integration/local_cluster.h"
#include "tests/integration/outage_scenario.h"
#include "tests/util/temp_dir.h"

namespace {

using namespace baton::testing;  // NOLINT: the test cluster's helpers

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 1, outage_s = 60;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--reps=", 0) == 0) reps = std::max(1, std::atoi(a.c_str() + 7));
    if (a.rfind("--outage-s=", 0) == 0) outage_s = std::max(1, std::atoi(a.c_str() + 11));
  }
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
      "\"service_max_silence_ratio\": %.2f, \"rounds\": %d}\n",
      killed, lost_s, outage_s, tgap / 1000.0, sgap / 1000.0, reps);
  return 0;
}
