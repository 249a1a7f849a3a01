#include "tests/util/security.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "tests/util/subprocess.h"

namespace baton::testing {
namespace {

std::string Script(const std::string& name) {
  return std::string(BATON_SOURCE_DIR) + "/scripts/" + name;
}

}  // namespace

std::string TestPolicyAccess() {
  return "admins: [root]\n"
         "tenants:\n"
         "  - {name: vision, members: [baton-alice]}\n"
         "  - {name: serving, members: [baton-bob]}\n";
}

std::string TestPolicyYaml(const std::string& training_extra) {
  return "classes:\n"
         "  - {name: inference-critical, value: 1000, service: true, tenants: [serving]}\n"
         "  - {name: inference, value: 900, service: true, tenants: [serving]}\n"
         "  - {name: labeling, value: 500, cooldown: 1m, min_runtime: 5m}\n"
         "  - {name: training, value: 300, cooldown: 2m, min_runtime: 10m" +
         training_extra +
         "}\n"
         "  - {name: experiment, value: 100, cooldown: 1m, min_runtime: 2m, pids_limit: 64}\n" +
         TestPolicyAccess();
}

std::string BenchPolicy() {
  return "admins: [root]\n"
         "classes:\n"
         "  - {name: inference-critical, value: 1000, service: true, tenants: [bench]}\n"
         "  - {name: inference, value: 900, service: true, tenants: [bench]}\n"
         "  - {name: labeling, value: 500, cooldown: 1m, min_runtime: 5m}\n"
         "  - {name: training, value: 300, cooldown: 2m, min_runtime: 10m}\n"
         "  - {name: experiment, value: 100, cooldown: 1m, min_runtime: 2m}\n"
         "tenants:\n"
         "  - {name: bench, members: [root], allow_root: true}\n"
         // Benchmarks offer more than a tenant's default fair use: limits on, never reached.
         "admission: {submit_rate: 1000000, submit_burst: 1000000, "
         "max_pending_per_tenant: 1000000}\n";
}

std::string MissingTestUsers() {
  for (const char* user : {kAlice, kBob, kMallory}) {
    if (getpwnam(user) == nullptr) {
      return std::string("test user ") + user + " is missing: run scripts/setup.sh as root";
    }
  }
  if (geteuid() != 0) return "running the CLI as test users needs root";
  return "";
}

void MakeShared(const std::string& dir) { chmod(dir.c_str(), 01777); }

std::vector<std::string> AsUser(const std::string& user) {
  if (user.empty() || user == kRoot) return {};
  return {"setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"};
}

std::string StagedBin(const std::string& name) {
  static std::mutex mu;
  static std::string stage;
  std::lock_guard<std::mutex> lock(mu);
  namespace fs = std::filesystem;
  if (stage.empty()) {
    char tmpl[] = "/tmp/baton-stage.XXXXXX";
    stage = mkdtemp(tmpl);
    chmod(stage.c_str(), 0755);
  }
  std::string to = stage + "/" + name;
  if (!fs::exists(to)) {
    std::error_code ec;
    fs::copy_file(std::string(BATON_BIN_DIR) + "/" + name, to + ".tmp",
                  fs::copy_options::overwrite_existing, ec);
    chmod((to + ".tmp").c_str(), 0755);
    fs::rename(to + ".tmp", to, ec);
  }
  return to;
}

TestSecurity::TestSecurity(const std::string& dir, std::vector<std::string> coordinator_sans)
    : dir_(dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  chmod(dir_.c_str(), 0711);  // traversable: test users reach the CA and munged's socket
  CommandResult munged = RunProcess({Script("munged.sh"), "start", dir_ + "/munge"}, {});
  if (munged.exit_code != 0) {
    why_ = "munged.sh start: " + munged.err;
    return;
  }
  for (auto args : {std::vector<std::string>{Script("certs.sh"), dir_ + "/tls", "ca"},
                    std::vector<std::string>{Script("certs.sh"), dir_ + "/tls", "coordinator"}}) {
    if (args.back() == "coordinator") {
      args.insert(args.end(), coordinator_sans.begin(), coordinator_sans.end());
    }
    CommandResult r = RunProcess(args, {});
    if (r.exit_code != 0) {
      why_ = "certs.sh: " + r.err;
      return;
    }
  }
  chmod((dir_ + "/tls").c_str(), 0755);
}

TestSecurity::~TestSecurity() { RunProcess(StopMungedCommand(), {}); }

std::vector<std::string> TestSecurity::StopMungedCommand() const {
  return {Script("munged.sh"), "stop", dir_ + "/munge"};
}

std::vector<std::string> TestSecurity::CoordinatorFlags() const {
  return {"--tls-ca",       ca(),
          "--tls-cert",     dir_ + "/tls/coordinator.crt",
          "--tls-key",      dir_ + "/tls/coordinator.key",
          "--munge-socket", munge_socket()};
}

std::pair<std::string, std::string> TestSecurity::NodeCert(const std::string& name,
                                                           const std::vector<std::string>& sans) {
  std::string base = dir_ + "/tls/node-" + name;
  if (!issued_[name]) {
    std::vector<std::string> args = {Script("certs.sh"), dir_ + "/tls", "node", name};
    args.insert(args.end(), sans.begin(), sans.end());
    CommandResult r = RunProcess(args, {});
    if (r.exit_code != 0) why_ = "certs.sh node " + name + ": " + r.err;
    issued_[name] = true;
  }
  return {base + ".crt", base + ".key"};
}

std::vector<std::string> TestSecurity::AgentFlags(const std::string& name,
                                                  const std::vector<std::string>& sans) {
  auto [cert, key] = NodeCert(name, sans);
  return {"--tls-ca", ca(), "--tls-cert", cert, "--tls-key", key};
}

std::map<std::string, std::string> TestSecurity::ClientEnv() const {
  return {{"BATON_CA", ca()}, {"BATON_MUNGE_SOCKET", munge_socket()}};
}

}  // namespace baton::testing
