#include "tests/util/etcd.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

namespace baton::testing {
namespace {

std::string Which(const std::string& name) {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

}  // namespace

EtcdCluster::EtcdCluster(int members, bool tls) : tls_(tls) {
  if (Which("etcd").empty() || Which("etcdctl").empty()) {
    why_ = "etcd is not installed (scripts/setup.sh installs etcd-server and etcd-client)";
    return;
  }
  std::string pattern = "/dev/shm/baton-etcd.XXXXXX";
  if (!std::filesystem::is_directory("/dev/shm")) pattern = "/tmp/baton-etcd.XXXXXX";
  char* made = mkdtemp(pattern.data());
  if (!made) {
    why_ = "cannot make a directory for etcd";
    return;
  }
  dir_ = made;
  if (tls_) {
    pki_ = dir_ + "/pki";
    std::string certs = std::string(BATON_SOURCE_DIR) + "/scripts/certs.sh";
    std::vector<std::vector<std::string>> steps = {{certs, pki_, "ca"},
                                                   {certs, pki_, "coordinator"}};
    for (int i = 0; i < members; ++i)
      steps.push_back({certs, pki_, "etcd", "m" + std::to_string(i)});
    for (const auto& step : steps) {
      CommandResult r = RunProcess(step, {});
      if (r.exit_code != 0) {
        why_ = "certs.sh failed: " + r.err;
        return;
      }
    }
  }
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = "m" + std::to_string(i);
    m.client_port = FreePort();
    m.peer_port = FreePort();
    members_.push_back(std::move(m));
  }
  for (int i = 0; i < members; ++i) Start(i);
  if (!WaitHealthy(std::chrono::seconds(30))) {
    why_ = "etcd did not become healthy: " + ReadFile(dir_ + "/m0.0.err").substr(0, 2000);
  }
}

EtcdCluster::~EtcdCluster() {
  for (auto& m : members_) m.process.reset();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string EtcdCluster::endpoint(int i) const {
  return std::string(tls_ ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(members_[i].client_port);
}

std::vector<std::string> EtcdCluster::Etcdctl(int i) const {
  std::vector<std::string> argv = {Which("etcdctl"), "--endpoints", endpoint(i),
                                   "--command-timeout", "1s"};
  if (tls_) {
    for (const std::string& f :
         {"--cacert=" + pki_ + "/ca.crt", "--cert=" + pki_ + "/coordinator.crt",
          "--key=" + pki_ + "/coordinator.key"}) {
      argv.push_back(f);
    }
  }
  return argv;
}

std::string EtcdCluster::endpoints() const {
  std::string out;
  for (int i = 0; i < size(); ++i) out += (i ? "," : "") + endpoint(i);
  return out;
}

void EtcdCluster::Start(int i) {
  std::string initial;
  for (const auto& m : members_) {
    initial +=
        (initial.empty() ? "" : ",") + m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
  }
  Member& m = members_[i];
  std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
  std::vector<std::string> argv = {
      Which("etcd"), "--name", m.name, "--data-dir", dir_ + "/" + m.name, "--listen-client-urls",
      endpoint(i), "--advertise-client-urls", endpoint(i), "--listen-peer-urls", peer,
      "--initial-advertise-peer-urls", peer, "--initial-cluster", initial,
      "--initial-cluster-state", "new", "--initial-cluster-token", dir_,
      // Quick elections on loopback (the defaults are for WANs).
      "--heartbeat-interval", "50", "--election-timeout", "500", "--auto-compaction-mode",
      "revision", "--auto-compaction-retention", "1000", "--log-level", "warn"};
  if (tls_) {
    for (const std::string& f :
         {std::string("--client-cert-auth"), "--trusted-ca-file=" + pki_ + "/ca.crt",
          "--cert-file=" + pki_ + "/etcd-" + m.name + ".crt",
          "--key-file=" + pki_ + "/etcd-" + m.name + ".key"}) {
      argv.push_back(f);
    }
  }
  m.process = std::make_unique<Subprocess>(argv, std::map<std::string, std::string>{},
                                           dir_ + "/" + m.name + "." + std::to_string(starts_++));
}

void EtcdCluster::Kill(int i, int sig) {
  Member& m = members_[i];
  if (!m.process) return;
  m.process->Signal(sig);
  m.process->Wait(std::chrono::seconds(10));
  m.process.reset();
}

bool EtcdCluster::WaitHealthy(std::chrono::milliseconds timeout) {
  return WaitFor(
      [&] {
        for (int i = 0; i < size(); ++i) {
          if (!members_[i].process) continue;
          std::vector<std::string> argv = Etcdctl(i);
          argv.insert(argv.end(), {"endpoint", "health"});
          auto r = RunProcess(argv, {{"ETCDCTL_API", "3"}}, std::chrono::seconds(5));
          if (r.exit_code != 0) return false;
        }
        return true;
      },
      timeout);
}

int EtcdCluster::Leader() {
  for (int i = 0; i < size(); ++i) {
    if (!members_[i].process) continue;
    std::vector<std::string> argv = Etcdctl(i);
    argv.insert(argv.end(), {"endpoint", "status", "-w", "json"});
    auto r = RunProcess(argv, {{"ETCDCTL_API", "3"}}, std::chrono::seconds(5));
    if (r.exit_code != 0) continue;
    // {"Endpoint":…,"Status":{"header":{…,"member_id":M,…},…,"leader":L,…}}
    auto field = [&](const std::string& key) {
      size_t p = r.out.find("\"" + key + "\":");
      if (p == std::string::npos) return std::string();
      p += key.size() + 3;
      return r.out.substr(p, r.out.find_first_of(",}", p) - p);
    };
    std::string member = field("member_id"), leader = field("leader");
    if (!member.empty() && member == leader) return i;
  }
  return -1;
}

}  // namespace baton::testing
