// Test doubles for the isolation layer: a CgroupDriver that records every call and keeps
// the limits it was given (for Isolator and Agent unit tests), a CommandRunner that
// records argv lists and answers from a script, and the scheduler's rank bindings.
// Header-only; thread-safe (one mutex).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "launcher/agent/isolation/cgroup_driver.h"
#include "launcher/agent/isolation/command.h"
#include "proto/api.pb.h"

namespace baton::testing {

#define BATON_FAKE_RETURN_IF_FAULT(op, name)      \
  do {                                            \
    absl::Status fake_status_ = Record(op, name); \
    if (!fake_status_.ok()) return fake_status_;  \
  } while (0)

class RecordingDriver : public CgroupDriver {
 public:
  std::string mode() const override { return "recording"; }
  absl::Status Init() override { return Record("Init", ""); }
  absl::Status Create(const std::string& name) override {
    BATON_FAKE_RETURN_IF_FAULT("Create", name);
    std::lock_guard<std::mutex> lock(mu_);
    exists_[name] = true;
    return absl::OkStatus();
  }
  absl::Status Apply(const std::string& name, const CgroupLimits& l) override {
    BATON_FAKE_RETURN_IF_FAULT("Apply", name);
    std::lock_guard<std::mutex> lock(mu_);
    limits_[name] = l;
    return absl::OkStatus();
  }
  absl::Status LimitPids(const std::string& name, uint64_t max) override {
    BATON_FAKE_RETURN_IF_FAULT("LimitPids", name);
    std::lock_guard<std::mutex> lock(mu_);
    pids_max_[name] = max;
    return absl::OkStatus();
  }
  absl::Status DenyDevices(const std::string& name,
                           const std::vector<CharDevice>& denied) override {
    BATON_FAKE_RETURN_IF_FAULT("DenyDevices", name);
    std::lock_guard<std::mutex> lock(mu_);
    denied_[name] = denied;
    return absl::OkStatus();
  }
  std::vector<std::string> ProcsFiles(const std::string& name) const override {
    return {"/fake/" + name + "/cgroup.procs"};
  }
  absl::Status LimitExitCpus(const std::string& cpus) override {
    std::lock_guard<std::mutex> lock(mu_);
    exit_cpus_ = cpus;
    return absl::OkStatus();
  }
  std::string exit_cpus() {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_cpus_;
  }
  absl::StatusOr<std::vector<pid_t>> Pids(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    return pids_[name];
  }
  absl::Status KillAll(const std::string& name) override {
    BATON_FAKE_RETURN_IF_FAULT("KillAll", name);
    std::lock_guard<std::mutex> lock(mu_);
    pids_[name].clear();
    return absl::OkStatus();
  }
  absl::Status Remove(const std::string& name) override {
    BATON_FAKE_RETURN_IF_FAULT("Remove", name);
    std::lock_guard<std::mutex> lock(mu_);
    exists_.erase(name);
    limits_.erase(name);
    return absl::OkStatus();
  }
  absl::StatusOr<CgroupStats> Stats(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_[name];
  }
  absl::StatusOr<std::vector<std::string>> List() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, e] : exists_) out.push_back(name);
    return out;
  }
  std::string Path(const std::string& name) const override { return "fake/" + name; }
  std::string NetPath(const std::string& name) const override { return "unified/fake/" + name; }
  int NetLevel(const std::string&) const override { return 2; }

  // Test controls and views.
  void Fail(const std::string& op, const std::string& name, absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_[op + " " + name] = s;
  }
  void SetPids(const std::string& name, std::vector<pid_t> pids) {
    std::lock_guard<std::mutex> lock(mu_);
    exists_[name] = true;
    pids_[name] = std::move(pids);
  }
  void SetStats(const std::string& name, CgroupStats st) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_[name] = st;
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  bool exists(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return exists_.count(name) > 0;
  }
  CgroupLimits limits(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return limits_[name];
  }
  uint64_t pids_max(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return pids_max_[name];
  }
  std::vector<CharDevice> denied(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return denied_[name];
  }

 private:
  absl::Status Record(const std::string& op, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(name.empty() ? op : op + " " + name);
    auto it = faults_.find(op + " " + name);
    return it == faults_.end() ? absl::OkStatus() : it->second;
  }

  std::mutex mu_;
  std::vector<std::string> calls_;
  std::map<std::string, absl::Status> faults_;
  std::map<std::string, bool> exists_;
  std::map<std::string, CgroupLimits> limits_;
  std::map<std::string, uint64_t> pids_max_;
  std::map<std::string, std::vector<CharDevice>> denied_;
  std::map<std::string, std::vector<pid_t>> pids_;
  std::map<std::string, CgroupStats> stats_;
  std::string exit_cpus_ = "unset";
};

// Answers each command with the first scripted reply whose prefix matches its joined
// argv ("tc -s class show"); unscripted commands succeed with no output, except the JSON
// listings, which answer an empty listing as the real tools do (they never print nothing).
class ScriptedRunner : public CommandRunner {
 public:
  static constexpr char kEmptyNftListing[] =
      R"({"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}}]})";

  absl::StatusOr<CommandOutput> Run(const std::vector<std::string>& argv) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string line = JoinArgs(argv);
    calls_.push_back(line);
    for (const auto& [prefix, out] : script_) {
      if (line.rfind(prefix, 0) == 0) return out;
    }
    if (line.rfind("nft -j list", 0) == 0) return CommandOutput{0, kEmptyNftListing, ""};
    if (line.rfind("tc -j ", 0) == 0) return CommandOutput{0, "[]", ""};
    return CommandOutput{0, "", ""};
  }
  void Answer(const std::string& prefix, CommandOutput out) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.emplace_back(prefix, std::move(out));
  }
  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, CommandOutput>> script_;
  std::vector<std::string> calls_;
};

// `nft -j list chain inet baton out` holding one rule per (comment, handle), shaped as
// nft 1.0.6 prints it (testdata/nft_chain.json is a recorded one).
inline std::string NftListing(const std::vector<std::pair<std::string, int>>& rules) {
  std::string out =
      R"({"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}}, )"
      R"({"chain": {"family": "inet", "table": "baton", "name": "out", "handle": 1}})";
  for (const auto& [comment, handle] : rules) {
    out += R"(, {"rule": {"family": "inet", "table": "baton", "chain": "out", "handle": )" +
           std::to_string(handle) + R"(, "comment": ")" + comment + R"(", "expr": []}})";
  }
  return out + "]}";
}

// Runs every command inside a network namespace (tests of the real tc/nft).
class NetnsRunner : public CommandRunner {
 public:
  explicit NetnsRunner(std::string netns) : netns_(std::move(netns)) {}
  absl::StatusOr<CommandOutput> Run(const std::vector<std::string>& argv) override {
    std::vector<std::string> full = {"nsenter", "--net=/var/run/netns/" + netns_};
    full.insert(full.end(), argv.begin(), argv.end());
    return real_.Run(full);
  }

 private:
  const std::string netns_;
  RealCommandRunner real_;
};

#undef BATON_FAKE_RETURN_IF_FAULT

// A placement's binding of one rank: its NUMA node (-1: spans) and charged CPUs.
inline v1::RankBinding RankOn(int32_t numa, std::vector<uint32_t> cpus = {}) {
  v1::RankBinding b;
  b.set_numa(numa);
  for (uint32_t c : cpus) b.add_cpus(c);
  return b;
}

}  // namespace baton::testing
