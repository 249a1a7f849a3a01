#include "coordinator/policy.h"

#include "common/resources.h"

namespace baton {
namespace {

PriorityClass Class(const char* name, int32_t value, bool service, int64_t cooldown_s,
                    int64_t min_runtime_s) {
  PriorityClass c;
  c.name = name;
  c.value = value;
  c.preemptible = !service;
  c.service = service;
  c.may_preempt = true;
  c.cooldown_base_s = cooldown_s;
  c.cooldown_cap_s = 3600;
  c.min_runtime_s = min_runtime_s;
  c.evicts_within_min_runtime = std::string(name) == "inference-critical";
  return c;
}

}  // namespace

absl::Duration Policy::ServiceRestart::Backoff(uint32_t streak) const {
  return DoublingBackoff(absl::Seconds(backoff_s), absl::Seconds(backoff_cap_s), streak);
}

Policy Policy::Default() {
  Policy p;
  p.classes = {
      Class("inference-critical", 1000, /*service=*/true, /*cooldown_s=*/60, /*min_runtime_s=*/0),
      Class("inference", 900, /*service=*/true, /*cooldown_s=*/60, /*min_runtime_s=*/0),
      Class("labeling", 500, /*service=*/false, /*cooldown_s=*/60, /*min_runtime_s=*/300),
      Class("training", 300, /*service=*/false, /*cooldown_s=*/120, /*min_runtime_s=*/600),
      Class("experiment", 100, /*service=*/false, /*cooldown_s=*/60, /*min_runtime_s=*/120),
  };
  return p;
}

}  // namespace baton
