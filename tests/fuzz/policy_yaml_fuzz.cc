// The policy YAML (coordinator/policy_config.h), read by the coordinator at start and on
// an admin's `baton policy set`. A file either is refused with InvalidArgument, or yields
// a Policy that passes ValidatePolicy on its own and keeps the promises the coordinator
// relies on (every class findable, positive backoffs, cooldowns and disconnect bounds).
#include <cstddef>
#include <cstdint>
#include <string>

#include "coordinator/policy_config.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckPromises(const baton::Policy& p) {
  FUZZ_CHECK(p.Find(p.default_class) != nullptr, "default class " + p.default_class);
  for (const baton::PriorityClass& c : p.classes) {
    FUZZ_CHECK(p.Find(c.name) == &c, "class " + c.name + " is not found by its name");
    const int64_t stop = p.StopAfterDisconnectS(c.name);
    FUZZ_CHECK(stop > 0 || stop == baton::Policy::kNever, "stop_after_disconnect of " + c.name);
    const baton::Policy::ServiceRestart r = p.ServiceRestartFor(c.name);
    FUZZ_CHECK(r.backoff_s > 0 && r.backoff_cap_s >= r.backoff_s, "restart backoff of " + c.name);
    FUZZ_CHECK(!(c.service && c.preemptible), "preemptible service class " + c.name);
    for (uint32_t evictions : {1u, 2u, 40u, 64u, 0xffffffffu}) {
      const int64_t ms = baton::sched::CooldownMs(c, evictions);
      FUZZ_CHECK(ms > 0 && ms <= c.cooldown_cap_s * 1000, "cooldown of " + c.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<baton::Policy> p = baton::ParsePolicy(yaml);
  if (!p.ok()) {
    FUZZ_CHECK(p.status().code() == absl::StatusCode::kInvalidArgument, p.status().ToString());
    return 0;
  }
  absl::Status valid = baton::ValidatePolicy(*p);
  FUZZ_CHECK(valid.ok(), "ParsePolicy accepted what ValidatePolicy refuses: " + valid.ToString());
  CheckPromises(*p);
  const std::string same = baton::DescribePolicyChange(*p, *p);
  FUZZ_CHECK(same == "classes, tenants and access unchanged", same);
  baton::DescribePolicyChange(baton::Policy::Default(), *p);  // the audit line of a change
  return 0;
}
