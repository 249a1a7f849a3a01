#include "coordinator/scheduler/fair_share.h"

#include <cmath>

namespace baton::sched {

double DecayFactor(int64_t elapsed_ms, int64_t half_life_ms) {
  if (elapsed_ms <= 0) return 1;
  if (half_life_ms <= 0) return 0;
  return std::exp2(-static_cast<double>(elapsed_ms) / static_cast<double>(half_life_ms));
}

double DecayedGpuSeconds(double gpus, int64_t elapsed_ms, int64_t half_life_ms) {
  if (elapsed_ms <= 0 || gpus <= 0) return 0;
  if (half_life_ms <= 0) return 0;
  double h = static_cast<double>(half_life_ms) / 1000.0;
  return gpus * h / std::log(2.0) * (1 - DecayFactor(elapsed_ms, half_life_ms));
}

void UsageLedger::Advance(Time now, const std::map<std::string, double>& running_gpus) {
  if (now <= as_of_) return;
  int64_t elapsed = now - as_of_;
  double factor = DecayFactor(elapsed, half_life_ms_);
  for (auto& [tenant, value] : usage_) value *= factor;
  for (const auto& [tenant, gpus] : running_gpus) {
    usage_[tenant] += DecayedGpuSeconds(gpus, elapsed, half_life_ms_);
  }
  as_of_ = now;
}

double UsageLedger::Usage(const std::string& tenant) const {
  auto it = usage_.find(tenant);
  return it == usage_.end() ? 0 : it->second;
}

double HeldGpus(const HeldNode& held) {
  if (held.gpu_share_percent > 0) return held.gpu_share_percent / 100.0;
  return static_cast<double>(held.gpu_uuids.size());
}

std::map<std::string, double> RunningGpusByTenant(const ClusterView& view) {
  std::map<std::string, double> out;
  for (const auto& g : view.running) {
    double& n = out[g.tenant];
    for (const auto& held : g.nodes) n += HeldGpus(held);
  }
  return out;
}

}  // namespace baton::sched
