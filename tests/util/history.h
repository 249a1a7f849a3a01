// A coordinator store filled with history, written directly (not through a JobManager):
// finished jobs, each with its transitions in the per-job family and the global log, as
// a coordinator that ran them would have left them. For the tests and the benchmark of
// start-up time against history (baton-bench-restart).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "coordinator/store.h"

namespace baton::testing {

struct HistoryOptions {
  uint64_t jobs = 1'000'000;             // finished jobs, ids 1..jobs
  uint32_t events_per_job = 5;           // transitions per job: PENDING .. SUCCEEDED (at least 2)
  int64_t start_ms = 1'700'000'000'000;  // job i is submitted at start_ms + i
  uint64_t batch_jobs = 1000;            // jobs per WriteBatch
};

// Writes the history into `store` (which should be empty) and the next job id after it.
// Job i: tenant "team-<i % 7>", user "user-<i % 13>", state SUCCEEDED, one attempt on
// node "n<i % 16>".
absl::Status WriteFinishedHistory(Store& store, const HistoryOptions& options);

struct PendingOptions {
  uint64_t jobs = 1'000'000;      // pending jobs, ids 1..jobs
  std::string tenant = "vision";  // every job's tenant and class: the policy's
  std::string priority_class = "training";
  int64_t start_ms = 1'700'000'000'000;  // job i is submitted at start_ms + i
  uint64_t batch_jobs = 1000;            // jobs per WriteBatch
};

// Writes `jobs` PENDING jobs of a typical spec into `store` (which should be empty), each
// with its submit event, and the next job id after them: one node, one rank, one GPU, 4
// CPUs, 16 GiB, a five-word command and ten environment variables (the spec issue 51
// sizes a pending job by). User "user-<i % 13>".
absl::Status WritePendingJobs(Store& store, const PendingOptions& options);

}  // namespace baton::testing
