// Unix users as this host's NSS knows them (getpwnam_r/getpwuid_r, getgrouplist,
// getgrgid_r): the coordinator maps a proven uid to a name and groups, the agent maps a
// job's user name to the uid, gid and groups its processes take. Blocking (NSS may be
// LDAP); not async-signal-safe. Thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton {

struct UnixUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> gids;          // primary and supplementary groups
  std::vector<std::string> groups;  // their names (those NSS can name)
  std::string home;                 // "" when it names no directory here
  std::string shell;
};

// NotFound naming the user or uid when NSS does not know it.
absl::StatusOr<UnixUser> LookupUser(const std::string& name);
absl::StatusOr<UnixUser> LookupUser(uid_t uid);

}  // namespace baton
