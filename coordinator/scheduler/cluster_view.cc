#include "coordinator/scheduler/cluster_view.h"

#include <algorithm>

namespace baton::sched {

bool Tolerates(const Taint& taint, const std::vector<Toleration>& tolerations) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.key != taint.key) return false;
    if (!t.effect.empty() && t.effect != taint.effect) return false;
    return t.exists || t.value == taint.value;
  });
}

}  // namespace baton::sched
