// What every test cluster needs to be a real, secured one: a private munged and a
// cluster CA with coordinator and node certificates (scripts/munged.sh, scripts/certs.sh)
// under a directory of the test's, and the test users scripts/setup.sh creates, as whom
// the CLI runs (setpriv) from a copy every user may execute (the checkout may be
// private). Thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace baton::testing {

// Test users (scripts/setup.sh): alice is in tenant vision, bob in serving, mallory in
// none; root is the admin of the test policies.
inline constexpr char kAlice[] = "baton-alice";
inline constexpr char kBob[] = "baton-bob";
inline constexpr char kMallory[] = "baton-mallory";
inline constexpr char kRoot[] = "root";

// The access part of every test cluster's policy (admins, tenants and their members).
std::string TestPolicyAccess();
// A whole policy: the built-in classes with the inference ones open to tenant serving
// (experiment jobs may have 64 processes per node), and TestPolicyAccess();
// `training_extra` adds keys to the training class (", stop_after_disconnect: 1s").
std::string TestPolicyYaml(const std::string& training_extra = "");

// A policy for benchmarks run as root: root is the admin and the only member of tenant
// bench, which may submit into every class and run root jobs (allow_root); its fair-use
// limits are on but far above what a benchmark offers.
std::string BenchPolicy();

// "" when the test users exist; else why not (run scripts/setup.sh as root).
std::string MissingTestUsers();
// Makes `dir` a place every test user's jobs may create files in (1777, as /tmp is): the
// checkpoint dirs of the tests' jobs, which belong to the job's user.
void MakeShared(const std::string& dir);
// argv prefix that runs a command as `user` ({} for root).
std::vector<std::string> AsUser(const std::string& user);
// A copy of build/bin/`name` in a directory every user can reach, made once per process.
std::string StagedBin(const std::string& name);

class TestSecurity {
 public:
  // Starts munged in `dir`/munge and makes a CA, a coordinator certificate (with
  // `coordinator_sans` beside localhost/127.0.0.1) in `dir`/tls. `dir` becomes
  // traversable by every user (its secrets stay in 0700/0600 entries).
  explicit TestSecurity(const std::string& dir, std::vector<std::string> coordinator_sans = {});
  ~TestSecurity();
  TestSecurity(const TestSecurity&) = delete;
  TestSecurity& operator=(const TestSecurity&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }

  std::string ca() const { return dir_ + "/tls/ca.crt"; }
  std::string munge_socket() const { return dir_ + "/munge/munge.socket"; }
  // --tls-ca/--tls-cert/--tls-key/--munge-socket for the coordinator.
  std::vector<std::string> CoordinatorFlags() const;
  // --tls-* for node `name`'s agent; issues its certificate (with `sans`) on first use.
  std::vector<std::string> AgentFlags(const std::string& name,
                                      const std::vector<std::string>& sans = {});
  // Issues a certificate for node `name` and returns {cert, key} paths.
  std::pair<std::string, std::string> NodeCert(const std::string& name,
                                               const std::vector<std::string>& sans = {});
  // BATON_CA and BATON_MUNGE_SOCKET for the CLI.
  std::map<std::string, std::string> ClientEnv() const;
  // The command that stops this munged (what the destructor runs), for a TeardownGuard.
  std::vector<std::string> StopMungedCommand() const;

 private:
  std::string dir_;
  std::string why_;
  std::map<std::string, bool> issued_;
};

}  // namespace baton::testing
