// A coordinator outage as a platform team fears it, shared by integration_outage_test and
// baton-bench-restart: on a 3-node x 2-GPU namespace cluster a train_mlp gang (2 nodes,
// alice) and an inference service (1 node, bob) run; the coordinator is kill -9'ed, stays
// away for `outage`, and is started again on the same data; the gang then trains to its
// end. The report says what the outage cost. Thread-compatible.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/integration/local_cluster.h"

namespace baton::testing {

struct OutageReport {
  std::string error;  // why the scenario could not be run through ("" when it was)
  uint64_t training = 0, service = 0;
  std::vector<std::string> training_flags;  // train_mlp's, for the uninterrupted hash
  std::string ckpt;                         // the gang's checkpoint dir (WITNESS in it)
  std::string heartbeat;                    // the service's "pid unix-ms" lines, 1 a second
  int64_t down_ms = 0, up_ms = 0;           // the coordinator killed / serving again
  // Of the two jobs: those that got a new attempt, or did not end as they should (the
  // gang succeeded, the service still running).
  int jobs_killed = 0;
  // Seconds of work to redo: per replaced training attempt, its end minus its last
  // checkpoint; for the service, its silences beyond 2 s.
  double work_lost_s = 0;
  int64_t training_max_gap_ms = 0;  // longest silence of a rank in the WITNESS
  int64_t service_max_gap_ms = 0;   // longest silence of the service's heartbeat
  int service_pids = 0;             // distinct pids that wrote the heartbeat
  std::string training_log;         // `baton logs` of the gang
};

// The gang's train_mlp flags: about `seconds` of training at 100 ms a step.
std::vector<std::string> OutageTrainingFlags(int seconds);

// Submits the gang and the service and waits until both run and the gang checkpointed.
OutageReport StartOutageJobs(NetnsCluster& cluster, const std::string& dir, int train_seconds);

// Heartbeat silences and pids of the service so far, into `report`.
void MeasureService(OutageReport& report);

// The whole scenario: StartOutageJobs, the outage, the gang's end, the figures.
OutageReport RunCoordinatorOutage(NetnsCluster& cluster, const std::string& dir,
                                  std::chrono::seconds outage);

// After the outage (down_ms and up_ms set): waits `wait` for the gang's end, then what it
// cost, into `r`.
void FinishOutage(NetnsCluster& cluster, OutageReport& r, std::chrono::seconds wait);

}  // namespace baton::testing
