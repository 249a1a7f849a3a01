// Authorization: who may do what, from the policy in force (coordinator/policy.h,
// AccessPolicy) and a caller whose identity was proven (coordinator/authn.h). Pure
// functions over plain data, called by the JobManager under its lock and by the
// services; every refusal is PermissionDenied with a sentence naming the rule.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/policy.h"
#include "proto/api.pb.h"

namespace baton {

// Who a call comes from, as authentication proved it: never what a client says about
// itself. Plain data.
struct Caller {
  std::string user;  // login name of the proven uid, or a token's user
  uint32_t uid = 0;
  std::vector<std::string> groups;  // the user's unix groups (NSS), for "@group" entries
  std::string method;               // "munge" or "token" (what proved it)
  std::string token_id;             // method "token"
  std::string token_tenant;         // a token bound to a tenant acts in that one only
};

namespace access {

// Admins are named by policy.admins; a token bound to a tenant is never an admin's.
bool IsAdmin(const AccessPolicy& policy, const Caller& caller);
// Whether `caller` is a member of `tenant` (and, for a bound token, it is the token's).
bool IsMember(const AccessPolicy& policy, const Caller& caller, const std::string& tenant);
// The tenants the caller may act in, sorted.
std::vector<std::string> TenantsOf(const AccessPolicy& policy, const Caller& caller);

// Who the coordinator takes the caller to be (`baton whoami`, the dashboard's whoami).
v1::WhoAmIResponse Describe(const AccessPolicy& policy, const Caller& caller);

// Every call: an admin, or a member of some tenant.
absl::Status CheckMayUseCluster(const AccessPolicy& policy, const Caller& caller);
absl::Status CheckAdmin(const AccessPolicy& policy, const Caller& caller, std::string_view what);

// The tenant a submit goes to: `requested` when the caller is a member (admins: any
// tenant), else the caller's only tenant. InvalidArgument when it is a member of several
// and named none; PermissionDenied when it may not submit for `requested`.
absl::StatusOr<std::string> SubmitTenant(const AccessPolicy& policy, const Caller& caller,
                                         const std::string& requested);
// Whether `tenant` may submit into the class (classes[].tenants; service classes are
// closed until listed). PermissionDenied naming the rule.
absl::Status CheckClassAllowed(const Policy& policy, const std::string& tenant,
                               const std::string& priority_class);

// Cancel, signal, read logs and see env values: admins, the job's owner, and members of
// its tenant.
bool MayActOn(const AccessPolicy& policy, const Caller& caller, const v1::Job& job);
absl::Status CheckMayActOn(const AccessPolicy& policy, const Caller& caller, const v1::Job& job,
                           std::string_view what);

// `job` as `caller` may see it: every job is visible (as in Slurm's squeue), but the env
// values of a job it may not act on are replaced by kRedacted.
inline constexpr char kRedacted[] = "<redacted>";
v1::Job ForViewer(const AccessPolicy& policy, const Caller& caller, v1::Job job);

}  // namespace access
}  // namespace baton
