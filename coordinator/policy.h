// Scheduling policy as the coordinator knows it: the scheduler's policy (classes,
// tenants, quotas, pools, limits, fair share; coordinator/scheduler/policy.h) plus the
// defaults admission gives a spec. Default() is the policy without a file;
// policy_config.h reads one. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/scheduler/policy.h"

namespace baton {

using PriorityClass = sched::PriorityClass;
using TenantPolicy = sched::TenantPolicy;

struct Policy : sched::Policy {
  std::string default_class = "training";
  uint32_t default_grace_seconds = 30;  // eviction/cancel grace when the spec says 0
  uint32_t max_grace_seconds = 3600;
  uint32_t default_max_restarts = 3;  // failure retries when the policy is unspecified
  uint64_t default_cpu_millis_per_rank = 1000;
  uint64_t default_memory_bytes_per_rank = 1ull << 30;

  // inference-critical > inference > labeling > training > experiment; the inference
  // classes are non-preemptible services. No tenants: nobody has a quota.
  static Policy Default();
};

}  // namespace baton
