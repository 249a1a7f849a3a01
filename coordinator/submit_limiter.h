// Fair use of the submit path, per tenant: a token bucket (admission.submit_rate per
// second, admission.submit_burst deep) and a cap on the jobs a tenant has waiting in the
// queue (admission.max_pending_per_tenant). A submit past either is refused with
// ResourceExhausted saying when to try again (rpc_util.h's Throttled); such refusals
// are counted by the caller, never stored, so a flood costs no disk writes. Tenants
// are independent: one tenant's flood never delays another's submits.
// Thread-compatible: the JobManager calls it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/policy.h"

namespace baton {

class SubmitLimiter {
 public:
  // Takes one submit token of `key` (a tenant, or "user:<name>" for a spec refused before
  // its tenant was known) at `now`; ResourceExhausted with the wait for the next token
  // when the bucket is empty. A rate of 0 never throttles.
  absl::Status TakeToken(const std::string& key, const Policy::Admission& limits, absl::Time now);
  // ResourceExhausted when `tenant` already has max_pending_per_tenant jobs waiting
  // (`waiting`: the JobTable's count).
  static absl::Status CheckWaiting(const std::string& tenant, uint32_t waiting,
                                   const Policy::Admission& limits);

 private:
  struct Bucket {
    double tokens = 0;
    absl::Time last;
  };
  std::map<std::string, Bucket> buckets_;
};

}  // namespace baton
