#include "coordinator/submit_limiter.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "proto/rpc_util.h"

namespace baton {

absl::Status SubmitLimiter::TakeToken(const std::string& key, const Policy::Admission& limits,
                                      absl::Time now) {
  if (limits.submit_rate <= 0) return absl::OkStatus();
  const double burst = std::max<double>(1, limits.submit_burst);
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst, now});
  Bucket& b = it->second;
  if (!fresh && now > b.last) {
    b.tokens = std::min(burst, b.tokens + absl::ToDoubleSeconds(now - b.last) * limits.submit_rate);
  }
  b.last = std::max(b.last, now);
  b.tokens = std::min(b.tokens, burst);  // the policy may have lowered the burst
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return absl::OkStatus();
  }
  absl::Duration wait = absl::Seconds((1 - b.tokens) / limits.submit_rate);
  std::string who = key.rfind("user:", 0) == 0 ? key.substr(5) : "tenant " + key;
  return Throttled(absl::StrFormat("%s submits faster than admission.submit_rate (%g/s, burst %u)",
                                   who, limits.submit_rate, limits.submit_burst),
                   wait);
}

absl::Status SubmitLimiter::CheckWaiting(const std::string& tenant, uint32_t waiting,
                                         const Policy::Admission& limits) {
  if (waiting < limits.max_pending_per_tenant) return absl::OkStatus();
  return Throttled("tenant " + tenant + " already has " + std::to_string(waiting) +
                       " jobs waiting (admission.max_pending_per_tenant); submit more once "
                       "some have started or been cancelled",
                   absl::Seconds(30));
}

}  // namespace baton
