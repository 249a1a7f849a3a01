#include "coordinator/access.h"

#include <algorithm>

namespace baton::access {
namespace {

bool Matches(const std::vector<std::string>& entries, const Caller& caller) {
  for (const auto& e : entries) {
    if (e == "*" || e == caller.user) return true;
    if (e.size() > 1 && e[0] == '@' &&
        std::find(caller.groups.begin(), caller.groups.end(), e.substr(1)) != caller.groups.end()) {
      return true;
    }
  }
  return false;
}

bool InTenant(const AccessPolicy& policy, const Caller& caller, const std::string& tenant) {
  if (policy.members.empty()) return tenant == kBuiltinTenant;
  auto it = policy.members.find(tenant);
  return it != policy.members.end() && Matches(it->second, caller);
}

std::string Who(const Caller& caller) {
  return caller.user + (caller.method == "token" ? " (token " + caller.token_id + ")" : "");
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool IsAdmin(const AccessPolicy& policy, const Caller& caller) {
  // A token bound to a tenant is a researcher's there, whoever its user is.
  return !caller.user.empty() && caller.token_tenant.empty() && Matches(policy.admins, caller);
}

bool IsMember(const AccessPolicy& policy, const Caller& caller, const std::string& tenant) {
  if (!caller.token_tenant.empty() && caller.token_tenant != tenant) return false;
  return InTenant(policy, caller, tenant);
}

std::vector<std::string> TenantsOf(const AccessPolicy& policy, const Caller& caller) {
  std::vector<std::string> out;
  if (policy.members.empty()) {
    if (IsMember(policy, caller, kBuiltinTenant)) out.push_back(kBuiltinTenant);
    return out;
  }
  for (const auto& [tenant, members] : policy.members) {
    if (IsMember(policy, caller, tenant)) out.push_back(tenant);
  }
  return out;  // std::map order: sorted
}

v1::WhoAmIResponse Describe(const AccessPolicy& policy, const Caller& caller) {
  v1::WhoAmIResponse out;
  out.set_user(caller.user);
  out.set_uid(caller.uid);
  for (const auto& g : caller.groups) out.add_groups(g);
  out.set_method(caller.method);
  out.set_token_id(caller.token_id);
  for (const auto& t : TenantsOf(policy, caller)) out.add_tenants(t);
  out.set_admin(IsAdmin(policy, caller));
  return out;
}

absl::Status CheckMayUseCluster(const AccessPolicy& policy, const Caller& caller) {
  if (IsAdmin(policy, caller) || !TenantsOf(policy, caller).empty()) return absl::OkStatus();
  if (!caller.token_tenant.empty()) {
    return absl::PermissionDeniedError(Who(caller) + " is bound to tenant " + caller.token_tenant +
                                       ", of which " + caller.user +
                                       " is not a member (policy tenants[].members)");
  }
  return absl::PermissionDeniedError(Who(caller) +
                                     " is a member of no tenant: an admin must add the user to "
                                     "a tenant's members in the policy (tenants[].members)");
}

absl::Status CheckAdmin(const AccessPolicy& policy, const Caller& caller, std::string_view what) {
  if (IsAdmin(policy, caller)) return absl::OkStatus();
  return absl::PermissionDeniedError(Who(caller) + " is not an admin: only admins " +
                                     std::string(what) + " (policy admins: " + Join(policy.admins) +
                                     ")");
}

absl::StatusOr<std::string> SubmitTenant(const AccessPolicy& policy, const Caller& caller,
                                         const std::string& requested) {
  if (!requested.empty()) {
    if (IsMember(policy, caller, requested)) return requested;
    if (IsAdmin(policy, caller)) return requested;
    return absl::PermissionDeniedError(
        Who(caller) + " may not submit for tenant " + requested + ": not a member" +
        (caller.token_tenant.empty() ? "" : " through a token bound to " + caller.token_tenant) +
        " (policy tenants[].members)");
  }
  std::vector<std::string> mine = TenantsOf(policy, caller);
  if (mine.size() == 1) return mine.front();
  if (mine.empty()) {
    absl::Status s = CheckMayUseCluster(policy, caller);
    if (!s.ok()) return s;
    return absl::InvalidArgumentError("tenant: " + Who(caller) +
                                      " is a member of no tenant; an admin names one with "
                                      "--tenant");
  }
  return absl::InvalidArgumentError("tenant: " + Who(caller) + " is a member of " + Join(mine) +
                                    "; pick one with --tenant");
}

absl::Status CheckClassAllowed(const Policy& policy, const std::string& tenant,
                               const std::string& priority_class) {
  auto it = policy.access.class_tenants.find(priority_class);
  if (it != policy.access.class_tenants.end()) {
    for (const auto& t : it->second) {
      if (t == "*" || t == tenant) return absl::OkStatus();
    }
    return absl::PermissionDeniedError("tenant " + tenant + " may not submit into class " +
                                       priority_class + " (policy classes[].tenants allows " +
                                       (it->second.empty() ? "none" : Join(it->second)) + ")");
  }
  const PriorityClass* cls = policy.Find(priority_class);
  if (cls != nullptr && cls->service) {
    return absl::PermissionDeniedError(
        "tenant " + tenant + " may not submit into class " + priority_class +
        ": service classes are open to no tenant until the policy lists them "
        "(classes[].tenants)");
  }
  return absl::OkStatus();
}

bool MayActOn(const AccessPolicy& policy, const Caller& caller, const v1::Job& job) {
  if (IsAdmin(policy, caller)) return true;
  if (caller.token_tenant.empty() && !caller.user.empty() && job.user() == caller.user) {
    return true;
  }
  return IsMember(policy, caller, job.spec().tenant());
}

absl::Status CheckMayActOn(const AccessPolicy& policy, const Caller& caller, const v1::Job& job,
                           std::string_view what) {
  if (MayActOn(policy, caller, job)) return absl::OkStatus();
  return absl::PermissionDeniedError(Who(caller) + " may not " + std::string(what) + " job " +
                                     std::to_string(job.id()) + " of tenant " +
                                     job.spec().tenant() +
                                     ": only its owner, members of its tenant and admins may");
}

v1::Job ForViewer(const AccessPolicy& policy, const Caller& caller, v1::Job job) {
  if (MayActOn(policy, caller, job)) return job;
  for (auto& [key, value] : *job.mutable_spec()->mutable_env()) value = kRedacted;
  return job;
}

}  // namespace baton::access
