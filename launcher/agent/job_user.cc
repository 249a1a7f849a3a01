#include "launcher/agent/job_user.h"

namespace baton {

absl::StatusOr<JobUser> ResolveJobUser(const std::string& name, const std::string& node) {
  if (name.empty()) {
    return absl::FailedPreconditionError("the launch names no user to run the job as");
  }
  absl::StatusOr<UnixUser> u = LookupUser(name);
  if (!u.ok()) {
    return absl::FailedPreconditionError("user '" + name + "' is unknown on node " + node +
                                         " (NSS): the job cannot run as its owner here");
  }
  return u;
}

}  // namespace baton
