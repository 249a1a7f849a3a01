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

absl::Status SubmitLimiter::CheckWaiting(const std::string& tenant,
                                         const Policy::Admission& limits) const {
  if (Waiting(tenant) < limits.max_pending_per_tenant) return absl::OkStatus();
  return Throttled("tenant " + tenant + " already has " + std::to_string(Waiting(tenant)) +
                       " jobs waiting (admission.max_pending_per_tenant); submit more once "
                       "some have started or been cancelled",
                   absl::Seconds(30));
}

void SubmitLimiter::AddWaiting(const std::string& tenant, int delta) {
  uint32_t& n = waiting_[tenant];
  n = delta < 0 && n < static_cast<uint32_t>(-delta) ? 0 : n + delta;
  if (n == 0) waiting_.erase(tenant);
}

uint32_t SubmitLimiter::Waiting(const std::string& tenant) const {
  auto it = waiting_.find(tenant);
  return it == waiting_.end() ? 0 : it->second;
}

}  // namespace baton
