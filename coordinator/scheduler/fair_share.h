// Fair-share accounting: each tenant's GPU-seconds decayed with a half-life. The
// coordinator keeps one UsageLedger across passes, advances it before each pass and puts
// its snapshot in ClusterView::usage (README.md); Plan divides it by the tenant's weight.
// UsageLedger is thread-compatible; the free functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "coordinator/scheduler/cluster_view.h"

namespace baton::sched {

// 2^(-elapsed / half_life); 1 for elapsed <= 0.
double DecayFactor(int64_t elapsed_ms, int64_t half_life_ms);

// GPU-seconds a constant `gpus` adds over `elapsed_ms`, each second decayed to the end of
// the interval: gpus · h/ln2 · (1 − 2^(−elapsed/h)).
double DecayedGpuSeconds(double gpus, int64_t elapsed_ms, int64_t half_life_ms);

class UsageLedger {
 public:
  UsageLedger(int64_t half_life_ms, Time start) : half_life_ms_(half_life_ms), as_of_(start) {}

  // Decays every tenant's usage to `now` and adds what `running_gpus` (GPUs held per
  // tenant, unchanged since the last call) used in between. Earlier `now`: no-op.
  void Advance(Time now, const std::map<std::string, double>& running_gpus);
  // Replaces a tenant's usage as of as_of() (restore from the store).
  void Set(const std::string& tenant, double gpu_seconds) { usage_[tenant] = gpu_seconds; }
  // A new half-life applies from now on (policy reloads).
  void set_half_life_ms(int64_t half_life_ms) { half_life_ms_ = half_life_ms; }

  double Usage(const std::string& tenant) const;
  const std::map<std::string, double>& Snapshot() const { return usage_; }
  Time as_of() const { return as_of_; }

 private:
  int64_t half_life_ms_;
  Time as_of_;
  std::map<std::string, double> usage_;
};

// The GPUs one node of a gang holds: whole GPUs and MIG slices count one each, an MPS
// share its fraction of one GPU.
double HeldGpus(const HeldNode& held);
// GPUs each tenant's running gangs hold in `view` (HeldGpus summed).
std::map<std::string, double> RunningGpusByTenant(const ClusterView& view);

}  // namespace baton::sched
