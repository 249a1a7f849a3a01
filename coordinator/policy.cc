#include "coordinator/policy.h"

namespace baton {

Policy Policy::Default() {
  Policy p;
  p.classes = {
      {"inference-critical", 1000, /*preemptible=*/false, /*service=*/true},
      {"inference", 900, /*preemptible=*/false, /*service=*/true},
      {"labeling", 500, /*preemptible=*/true, /*service=*/false},
      {"training", 300, /*preemptible=*/true, /*service=*/false},
      {"experiment", 100, /*preemptible=*/true, /*service=*/false},
  };
  return p;
}

const PriorityClass* Policy::Find(std::string_view name) const {
  for (const auto& c : classes) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace baton
