#include "launcher/agent/keeper_args.h"

#include <charconv>
#include <cstdint>
#include <string_view>

namespace baton {
namespace {

// A whole decimal number in [0, max]; nullopt otherwise.
std::optional<uint64_t> Number(std::string_view text, uint64_t max) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max) {
    return std::nullopt;
  }
  return v;
}

bool ParseUser(std::string_view text, ProcessUser* u) {
  size_t a = text.find(':');
  if (a == std::string_view::npos) return false;
  size_t b = text.find(':', a + 1);
  auto uid = Number(text.substr(0, a), UINT32_MAX - 1);
  auto gid =
      Number(text.substr(a + 1, b == std::string_view::npos ? b : b - a - 1), UINT32_MAX - 1);
  if (!uid || !gid) return false;
  u->uid = static_cast<uid_t>(*uid);
  u->gid = static_cast<gid_t>(*gid);
  if (b == std::string_view::npos) return true;
  std::vector<uint32_t> groups;
  if (!ParseNumberList(text.substr(b + 1), UINT32_MAX - 1, &groups)) return false;
  u->groups.assign(groups.begin(), groups.end());
  return true;
}

}  // namespace

std::vector<int*> KeeperFds(KeeperArgs& k) {
  std::vector<int*> fds = {&k.msg_fd, &k.out_fd};
  if (k.err_fd >= 0) fds.push_back(&k.err_fd);
  for (int& fd : k.keep_fds) fds.push_back(&fd);
  return fds;
}

std::vector<std::string> EncodeKeeperArgs(const KeeperArgs& k) {
  std::vector<std::string> a = {"--msg-fd=" + std::to_string(k.msg_fd),
                                "--out-fd=" + std::to_string(k.out_fd)};
  if (k.err_fd >= 0) a.push_back("--err-fd=" + std::to_string(k.err_fd));
  for (int fd : k.keep_fds) a.push_back("--keep-fd=" + std::to_string(fd));
  if (k.group != 0) a.push_back("--group=" + std::to_string(k.group));
  for (const auto& p : k.cgroup_procs) a.push_back("--cgroup=" + p);
  if (!k.exit_cgroup_procs.empty()) a.push_back("--exit-cgroup=" + k.exit_cgroup_procs);
  if (!k.binding.cpus.empty()) a.push_back("--cpus=" + JoinNumberList(k.binding.cpus));
  if (!k.binding.mems.empty()) a.push_back("--mems=" + JoinNumberList(k.binding.mems));
  if (k.user) {
    std::string u = "--user=" + std::to_string(k.user->uid) + ":" + std::to_string(k.user->gid);
    if (!k.user->groups.empty()) {
      u +=
          ":" + JoinNumberList(std::vector<uint32_t>(k.user->groups.begin(), k.user->groups.end()));
    }
    a.push_back(u);
  }
  a.push_back("--cwd=" + k.cwd);
  a.push_back("--exit-prefix=" + k.exit_prefix);
  a.push_back("--argc=" + std::to_string(k.argv.size()));
  a.push_back("--");
  a.insert(a.end(), k.argv.begin(), k.argv.end());
  a.insert(a.end(), k.env.begin(), k.env.end());
  return a;
}

bool DecodeKeeperArgs(const std::vector<std::string>& args, KeeperArgs* out, std::string* error) {
  KeeperArgs k;
  std::optional<uint64_t> argc;
  bool have_cwd = false, have_prefix = false;
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    *error = why;
    *out = k;  // what was read before the problem (the status pipe, to report it on)
    return false;
  };
  constexpr uint64_t kMaxFd = 1 << 20;
  for (; i < args.size() && args[i] != "--"; ++i) {
    std::string_view arg = args[i];
    size_t eq = arg.find('=');
    if (arg.substr(0, 2) != "--" || eq == std::string_view::npos) {
      return fail("malformed option '" + args[i] + "'");
    }
    std::string_view name = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    auto fd = [&](int* into) {
      auto n = Number(value, kMaxFd);
      if (n) *into = static_cast<int>(*n);
      return n.has_value();
    };
    bool ok = true;
    if (name == "msg-fd") {
      ok = fd(&k.msg_fd);
    } else if (name == "out-fd") {
      ok = fd(&k.out_fd);
    } else if (name == "err-fd") {
      ok = fd(&k.err_fd);
    } else if (name == "keep-fd") {
      int f = -1;
      ok = fd(&f) && k.keep_fds.size() < 60;
      k.keep_fds.push_back(f);
    } else if (name == "group") {
      auto g = Number(value, INT32_MAX);
      ok = g.has_value();
      if (ok) k.group = static_cast<pid_t>(*g);
    } else if (name == "cgroup") {
      ok = !value.empty();
      k.cgroup_procs.emplace_back(value);
    } else if (name == "exit-cgroup") {
      ok = !value.empty();
      k.exit_cgroup_procs = std::string(value);
    } else if (name == "cpus") {
      ok = ParseNumberList(value, 1 << 16, &k.binding.cpus);
    } else if (name == "mems") {
      ok = ParseNumberList(value, 1 << 16, &k.binding.mems);
    } else if (name == "user") {
      k.user.emplace();
      ok = ParseUser(value, &*k.user);
    } else if (name == "cwd") {
      ok = !value.empty();
      have_cwd = true;
      k.cwd = std::string(value);
    } else if (name == "exit-prefix") {
      ok = !value.empty();
      have_prefix = true;
      k.exit_prefix = std::string(value);
    } else if (name == "argc") {
      argc = Number(value, args.size());
      ok = argc.has_value() && *argc > 0;
    } else {
      return fail("unknown option '--" + std::string(name) + "'");
    }
    if (!ok) return fail("malformed option '" + args[i] + "'");
  }
  if (k.msg_fd < 0 || k.out_fd < 0) return fail("--msg-fd and --out-fd are required");
  if (!have_cwd || !have_prefix || !argc) {
    return fail("--cwd, --exit-prefix and --argc are required");
  }
  if (i == args.size()) return fail("no '--' before the command");
  ++i;
  if (args.size() - i < *argc) return fail("fewer arguments than --argc says");
  k.argv.assign(args.begin() + static_cast<std::ptrdiff_t>(i),
                args.begin() + static_cast<std::ptrdiff_t>(i + *argc));
  if (k.argv[0].empty()) return fail("an empty command");
  k.env.assign(args.begin() + static_cast<std::ptrdiff_t>(i + *argc), args.end());
  for (const auto& e : k.env) {
    if (e.find('=') == std::string::npos || e[0] == '=') {
      return fail("environment entry '" + e + "' is not NAME=value");
    }
  }
  *out = std::move(k);
  return true;
}

}  // namespace baton
