// Unix users as the coordinator's NSS knows them (getpwuid_r, getpwnam_r, getgrouplist):
// a uid proven by MUNGE becomes a user name and its groups; a service token's user must
// exist. Answers are cached for `ttl`, so a busy coordinator does not ask NSS (maybe
// LDAP) on every call. Thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/unix_user.h"

namespace baton {

using UserInfo = UnixUser;

class UserDirectory {
 public:
  explicit UserDirectory(Clock* clock, absl::Duration ttl = absl::Minutes(1));

  // NotFound (PermissionDenied-worthy for callers) when NSS does not know the user.
  absl::StatusOr<UserInfo> ByUid(uid_t uid);
  absl::StatusOr<UserInfo> ByName(const std::string& name);

 private:
  struct Cached {
    UserInfo info;
    absl::Time fetched;
  };
  absl::StatusOr<UserInfo> Lookup(bool by_uid, uid_t uid, const std::string& name);

  Clock* const clock_;
  const absl::Duration ttl_;
  std::mutex mu_;
  std::map<uid_t, Cached> by_uid_;
  std::map<std::string, uid_t> uid_of_;
};

}  // namespace baton
