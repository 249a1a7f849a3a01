#include "coordinator/users.h"

namespace baton {

UserDirectory::UserDirectory(Clock* clock, absl::Duration ttl) : clock_(clock), ttl_(ttl) {}

absl::StatusOr<UserInfo> UserDirectory::ByUid(uid_t uid) { return Lookup(true, uid, ""); }

absl::StatusOr<UserInfo> UserDirectory::ByName(const std::string& name) {
  return Lookup(false, 0, name);
}

absl::StatusOr<UserInfo> UserDirectory::Lookup(bool by_uid, uid_t uid, const std::string& name) {
  absl::Time now = clock_->Monotonic();
  {
    std::lock_guard<std::mutex> lock(mu_);
    uid_t key = uid;
    bool known = by_uid;
    if (!by_uid) {
      auto it = uid_of_.find(name);
      known = it != uid_of_.end();
      if (known) key = it->second;
    }
    auto it = known ? by_uid_.find(key) : by_uid_.end();
    if (it != by_uid_.end() && now - it->second.fetched < ttl_) return it->second.info;
  }
  absl::StatusOr<UnixUser> found = by_uid ? LookupUser(uid) : LookupUser(name);
  if (!found.ok()) return found.status();
  UserInfo info = std::move(*found);
  std::lock_guard<std::mutex> lock(mu_);
  by_uid_[info.uid] = {info, now};
  uid_of_[info.name] = info.uid;
  return info;
}

}  // namespace baton
