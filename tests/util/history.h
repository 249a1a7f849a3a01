// A coordinator store filled with history, written directly (not through a JobManager):
// finished jobs, each with its transitions in the per-job family and the global log, as
// a coordinator that ran them would have left them. For the tests and the benchmark of
// start-up time against history (baton-bench-restart).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/store.h"

namespace baton::testing {

struct HistoryOptions {
  uint64_t jobs = 1'000'000;             // finished jobs, ids 1..jobs
  uint32_t events_per_job = 5;           // transitions per job: PENDING .. SUCCEEDED (at least 2)
  int64_t start_ms = 1'700'000'000'000;  // job i is submitted at start_ms + i
  uint64_t batch_jobs = 1000;            // jobs per WriteBatch
  // Spread: job i is submitted at start_ms + i * span_ms / jobs instead (0: 1 ms apart).
  int64_t span_ms = 0;
  uint32_t users = 13;   // user "user-<i % users>"
  uint32_t tenants = 7;  // tenant "team-<i % tenants>"
};

// Writes the history into `store` (which should be empty) and the next job id after it.
// Job i: tenant "team-<i % tenants>", user "user-<i % users>", state SUCCEEDED, one
// attempt of a minute on node "n<i % 16>" with one GPU.
absl::Status WriteFinishedHistory(Store& store, const HistoryOptions& options);

struct PendingOptions {
  uint64_t jobs = 1'000'000;      // pending jobs, ids 1..jobs
  std::string tenant = "vision";  // every job's tenant and class: the policy's
  std::string priority_class = "training";
  // When set, job i's tenant and class are these, cycled by id (tenants[i % n]).
  std::vector<std::string> tenants;
  std::vector<std::string> priority_classes;
  int64_t start_ms = 1'700'000'000'000;  // job i is submitted at start_ms + i
  uint64_t batch_jobs = 1000;            // jobs per WriteBatch
};

// Writes `jobs` PENDING jobs of a typical spec into `store` (which should be empty), each
// with its submit event, and the next job id after them: one node, one rank, one GPU, 4
// CPUs, 16 GiB, a five-word command and ten environment variables (the spec issue 51
// sizes a pending job by). User "user-<i % 13>".
absl::Status WritePendingJobs(Store& store, const PendingOptions& options);

struct UsageOptions {
  int64_t last_day = 20'000;  // days since 1970 (UTC): the newest day written
  uint32_t days = 365;
  uint32_t tenants = 100;          // "team-<t>"
  uint32_t users_per_tenant = 10;  // "user-<t * users_per_tenant + u>"
  uint32_t classes_per_user = 2;   // "class-<c>"
};

// Writes a usage rollup into `store`: every day, every tenant's record has a row per user
// and class, with GPU-seconds, outcomes, an eviction and three waits (as a busy cluster's
// year would leave it).
absl::Status WriteUsageRollup(Store& store, const UsageOptions& options);

}  // namespace baton::testing
