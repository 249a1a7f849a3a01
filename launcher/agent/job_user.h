// Who an attempt's processes run as on this node: the job owner's uid, primary gid and
// supplementary groups, as this node's NSS knows (common/unix_user.h) the user the
// coordinator names in the Launch. Resolved before any fork (NSS is not
// async-signal-safe). Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/unix_user.h"

namespace baton {

using JobUser = UnixUser;

// FailedPrecondition naming the user and the node when NSS does not know `name`.
absl::StatusOr<JobUser> ResolveJobUser(const std::string& name, const std::string& node);

}  // namespace baton
