// Real-kernel fixtures for the isolation tests (run as root, as CI does): a v1 cgroup
// parent of the test's own, a veth pair between two network namespaces, a veth pair in
// the root namespace; each removed at scope exit even when the test fails, and each
// reporting why it cannot exist here (for GTEST_SKIP). Header-only; thread-compatible.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "launcher/agent/isolation/cgroup_fs.h"
#include "launcher/agent/isolation/command.h"
#include "launcher/agent/isolation/ifb_redirect.h"

namespace baton::testing {

inline std::string Sh(const std::string& cmd) {
  RealCommandRunner run;
  auto r = run.Run({"sh", "-c", cmd});
  return r.ok() && r->exit_code == 0 ? r->out : "ERROR: " + (r.ok() ? r->err : "");
}

inline std::map<std::string, std::string> V1Mounts() {
  std::ifstream in("/proc/self/mounts");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseV1Mounts(ss.str());
}

// "" when v1 cgroups can be driven here, else why not.
inline std::string V1Missing() {
  if (geteuid() != 0) return "needs root";
  CgroupLayout l = DetectCgroupLayout("/sys/fs/cgroup");
  if (l != CgroupLayout::kV1 && l != CgroupLayout::kHybrid) return "no cgroup v1 controllers";
  auto m = V1Mounts();
  if (!m.count("cpu") || !m.count("memory") || !m.count("cpuset")) {
    return "cpu, memory or cpuset hierarchy not mounted";
  }
  return "";
}

inline bool HybridHost() { return DetectCgroupLayout("/sys/fs/cgroup") == CgroupLayout::kHybrid; }

// Kills every process below `top` in every hierarchy, then removes the directories.
class CgroupTreeGuard {
 public:
  explicit CgroupTreeGuard(std::string top) : top_(std::move(top)) {}
  ~CgroupTreeGuard() {
    std::vector<std::string> roots;
    for (const auto& [c, root] : V1Mounts()) roots.push_back(root);
    roots.push_back("/sys/fs/cgroup/unified");
    namespace fs = std::filesystem;
    for (const auto& root : roots) {
      std::string dir = root + "/" + top_;
      if (!fs::exists(dir)) continue;
      std::vector<std::string> dirs = {dir};
      for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.is_directory()) dirs.push_back(e.path());
      }
      for (const auto& d : dirs) {
        std::ifstream procs(d + "/cgroup.procs");
        pid_t p;
        while (procs >> p) kill(p, SIGKILL);
      }
      for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        for (int i = 0; i < 200 && rmdir(it->c_str()) != 0 && errno == EBUSY; ++i) usleep(5000);
      }
    }
  }
  const std::string& top() const { return top_; }

 private:
  const std::string top_;
};

// Namespaces <p>a and <p>b joined by veth <p>a/<p>b with 10.<n>.0.1 and 10.<n>.0.2.
class NetnsPair {
 public:
  explicit NetnsPair(const std::string& prefix, int subnet)
      : a_(prefix + "a"),
        b_(prefix + "b"),
        ip_a_("10." + std::to_string(subnet) + ".0.1"),
        ip_b_("10." + std::to_string(subnet) + ".0.2") {
    std::string A = "nsenter --net=/var/run/netns/" + a_ + " ";
    std::string B = "nsenter --net=/var/run/netns/" + b_ + " ";
    error_ = Sh("ip netns add " + a_ + " && ip netns add " + b_ + " && ip link add " + a_ +
                " type veth peer name " + b_ + " && ip link set " + a_ + " netns " + a_ +
                " && ip link set " + b_ + " netns " + b_ + " && " + A + "ip addr add " + ip_a_ +
                "/24 dev " + a_ + " && " + A + "ip link set " + a_ + " up && " + A +
                "ip link set lo up && " + B + "ip addr add " + ip_b_ + "/24 dev " + b_ + " && " +
                B + "ip link set " + b_ + " up && " + B + "ip link set lo up");
    if (error_.rfind("ERROR", 0) != 0) error_.clear();
  }
  ~NetnsPair() {
    Sh("ip netns del " + a_ + " 2>/dev/null; ip netns del " + b_ + " 2>/dev/null; true");
  }
  const std::string& error() const { return error_; }  // "" when it is up
  const std::string& a() const { return a_; }          // netns and its veth end
  const std::string& ip_b() const { return ip_b_; }

 private:
  std::string a_, b_, ip_a_, ip_b_, error_;
};

// A veth pair in the current namespace (a NIC for an agent's HTB tree); removed at exit.
class RootVeth {
 public:
  explicit RootVeth(const std::string& name) : name_(name) {
    error_ = Sh("ip link add " + name + " type veth peer name " + name + "p && ip link set " +
                name + " up && ip link set " + name + "p up");
    if (error_.rfind("ERROR", 0) != 0) error_.clear();
  }
  // The veth, and the IFB an agent's network caps made for it (ifb_redirect.h).
  ~RootVeth() {
    Sh("ip link del " + name_ + " 2>/dev/null; ip link del " + IfbNameFor(name_) +
       " 2>/dev/null; true");
  }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_, error_;
};

}  // namespace baton::testing
