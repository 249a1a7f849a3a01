// A one-node baton cluster for baton-bench-isolation: a coordinator and an agent with
// isolation on (cgroups, an HTB tree on the bench's veth), started for one round and
// stopped at its end so that the floors between rounds run with no baton daemon at all;
// and the CLI calls the bench makes. Single-threaded (the bench's main thread).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/util/security.h"
#include "tests/util/subprocess.h"

namespace baton::bench {

// A number from a JSON object (proto3 JSON writes 64-bit integers as strings); `def`
// when the object or the field is missing.
double Num(const nlohmann::json& j, const std::string& key, double def = -1);
std::string Str(const nlohmann::json& j, const std::string& key);
int Sh(const std::string& cmd);
// A binary next to this one (build/bin/).
std::string Bin(const std::string& name);

// Where the bench puts things, as CPU lists for taskset: the probe on the top CPU (where
// baton's scheduler puts a 1-CPU inference job), everything else on the others.
struct Cpus {
  std::string probe, others, all;
  static std::optional<Cpus> OfThisMachine();  // nullopt with fewer than 2 CPUs
};
// `cmd` under `taskset -c cpus`.
std::vector<std::string> Pinned(const std::string& cpus, std::vector<std::string> cmd);
// This thread's affinity (and so its children's); false when the kernel refuses.
bool PinSelf(const std::string& cpus);

class Cluster {
 public:
  // Starts the coordinator and the agent (node `node`, NIC `nic` at 1 Gbit/s, its defaults
  // otherwise, plus `agent_flags`) in `dir`; ok() says whether the node registered.
  Cluster(const std::string& dir, const std::string& node, const std::string& nic,
          testing::TestSecurity* security, const std::vector<std::string>& agent_flags);
  // Stops both (SIGTERM) and removes what the agent leaves: its nft table, its cgroups.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  bool ok() const { return ok_; }
  // The CLI's stdout, "" when it failed.
  std::string Baton(std::vector<std::string> args);
  // Submits a one-node job of 1 CPU; returns its id (0 on failure).
  uint64_t Submit(const std::string& cls, const std::string& name,
                  const std::vector<std::string>& command);
  nlohmann::json Status(uint64_t job);
  // Polls `baton status` (each a process) after `quiet_ms` without any, so the polling
  // does not run while a probe measures.
  bool WaitState(uint64_t job, const std::string& state, int seconds = 60, int quiet_ms = 0);
  // Waits for the job's output to hold a JSON document with `key` (the probes print theirs
  // when they end) by reading the agent's log, so that no CLI call runs while a probe
  // measures; then for the job to succeed. The document, or {} on a timeout.
  nlohmann::json WaitOutput(uint64_t job, const std::string& key, int seconds = 60);
  // The limits of the job's last attempt ({} while none is reported).
  nlohmann::json Limits(uint64_t job);
  // The job's output as one JSON document (iperf3 -J), or its last line.
  nlohmann::json Output(uint64_t job);

 private:
  std::string dir_, node_, address_;
  testing::TestSecurity* security_;
  std::vector<std::unique_ptr<testing::Subprocess>> procs_;
  bool ok_ = false;
};

}  // namespace baton::bench
