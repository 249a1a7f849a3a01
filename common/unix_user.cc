#include "common/unix_user.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <cerrno>

namespace baton {
namespace {

absl::StatusOr<UnixUser> Lookup(bool by_uid, uid_t uid, const std::string& name) {
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
  UnixUser u;
  u.name = found->pw_name;
  u.uid = found->pw_uid;
  u.gid = found->pw_gid;
  u.shell = found->pw_shell ? found->pw_shell : "";
  struct stat st {};
  if (found->pw_dir && stat(found->pw_dir, &st) == 0 && S_ISDIR(st.st_mode)) u.home = found->pw_dir;
  int n = 32;
  u.gids.resize(n);
  while (getgrouplist(found->pw_name, found->pw_gid, u.gids.data(), &n) < 0) u.gids.resize(n);
  u.gids.resize(n);
  std::vector<char> gbuf(16 * 1024);
  for (gid_t g : u.gids) {
    group grp{}, *named = nullptr;
    while (getgrgid_r(g, &grp, gbuf.data(), gbuf.size(), &named) == ERANGE) {
      gbuf.resize(gbuf.size() * 2);
    }
    if (named) u.groups.emplace_back(named->gr_name);
  }
  return u;
}

}  // namespace

absl::StatusOr<UnixUser> LookupUser(const std::string& name) { return Lookup(false, 0, name); }
absl::StatusOr<UnixUser> LookupUser(uid_t uid) { return Lookup(true, uid, ""); }

}  // namespace baton
