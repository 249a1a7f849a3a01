#include "coordinator/users.h"

#include <grp.h>
#include <pwd.h>

namespace baton {
namespace {

std::vector<std::string> GroupNames(const char* user, gid_t gid) {
  int n = 64;
  std::vector<gid_t> gids(n);
  while (getgrouplist(user, gid, gids.data(), &n) < 0) gids.resize(n);
  gids.resize(n);
  std::vector<std::string> names;
  std::vector<char> buf(16 * 1024);
  for (gid_t g : gids) {
    group grp{}, *found = nullptr;
    while (getgrgid_r(g, &grp, buf.data(), buf.size(), &found) == ERANGE)
      buf.resize(buf.size() * 2);
    if (found) names.emplace_back(found->gr_name);
  }
  return names;
}

}  // namespace

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
  std::vector<char> buf(16 * 1024);
  passwd pw{}, *found = nullptr;
  for (;;) {
    int err = by_uid ? getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)
                     : getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found);
    if (err != ERANGE) break;
    buf.resize(buf.size() * 2);
  }
  if (found == nullptr) {
    return absl::NotFoundError(by_uid ? "uid " + std::to_string(uid) + " has no user name (NSS)"
                                      : "no user named '" + name + "' (NSS)");
  }
  UserInfo info;
  info.name = found->pw_name;
  info.uid = found->pw_uid;
  info.gid = found->pw_gid;
  info.groups = GroupNames(found->pw_name, found->pw_gid);
  std::lock_guard<std::mutex> lock(mu_);
  by_uid_[info.uid] = {info, now};
  uid_of_[info.name] = info.uid;
  return info;
}

}  // namespace baton
