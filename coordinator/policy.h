// Scheduling policy as the coordinator knows it today: the priority classes and the
// defaults a spec inherits. The scheduler capability makes it a YAML file with tenants
// and quotas; this is its seed. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

struct PriorityClass {
  std::string name;
  int32_t value = 0;        // higher runs first
  bool preemptible = true;  // may be evicted by strictly higher classes
  bool service = false;     // inference: restart always, no max runtime, never borrows
};

struct Policy {
  std::vector<PriorityClass> classes;
  std::string default_class = "training";
  uint32_t default_grace_seconds = 30;  // eviction/cancel grace when the spec says 0
  uint32_t max_grace_seconds = 3600;
  uint32_t default_max_restarts = 3;  // failure retries when the policy is unspecified
  uint64_t default_cpu_millis_per_rank = 1000;
  uint64_t default_memory_bytes_per_rank = 1ull << 30;

  // inference-critical > inference > labeling > training > experiment.
  static Policy Default();
  const PriorityClass* Find(std::string_view name) const;
};

}  // namespace baton
