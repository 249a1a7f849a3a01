// Random scheduler worlds for the property tests (scheduler_property_test.cc) and the
// equivalence of Scheduler with Plan (scheduler_incremental_test.cc): mixed nodes (MIG,
// NUMA, SMT, pools, taints, zones), a random policy, gangs a first pass placed, a queue of
// random jobs; and what the coordinator does with a pass's decisions before the next.
// A seed makes the same world under GCC and clang.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "coordinator/scheduler/cluster_view.h"
#include "coordinator/scheduler/decisions.h"
#include "coordinator/scheduler/policy.h"

namespace baton::sched::testing {

// The time random worlds are made for.
constexpr Time kWorldNow = 360'000'000;

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  uint64_t Int(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, v.size() - 1)];
  }
  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

// Node `i`: named "n<i>".
NodeInfo RandomNode(Random& r, int i);
PendingJob RandomJob(Random& r, JobId id);
Policy RandomPolicy(Random& r);

struct World {
  ClusterView view;
  Policy policy;
};
World RandomWorld(uint64_t seed);

// Placements start (as gangs started at kNow), evictions mark their victims leaving,
// preemption reservations go back to their jobs.
void Apply(ClusterView& v, const Decisions& d);

}  // namespace baton::sched::testing
