// A real coordinator and real agents on loopback, each a child process on port 0 with a
// data dir under one temp dir; `baton` is run as a process too. Used by the end-to-end
// tests and the submit benchmark's fixtures.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {

class LocalCluster {
 public:
  // Starts the coordinator and `agents` agents with `gpus` fake GPUs each, and waits
  // until every agent is ready. Failures are reported through gtest.
  LocalCluster(int agents, int gpus);
  ~LocalCluster();

  const std::string& coordinator() const { return address_; }
  const std::string& dir() const { return dir_.path(); }
  // Runs `baton ARGS…` as alice of tenant vision (override with env).
  CommandResult Baton(std::vector<std::string> args, std::map<std::string, std::string> env = {});
  // A job's state name from `baton status --json`, "" when it cannot be read.
  std::string StateOf(uint64_t job);
  bool WaitForState(uint64_t job, const std::string& state,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

  void KillCoordinator(int sig);
  void StartCoordinator();  // on the same data dir and port as before
  bool WaitForReadyNodes(int n, std::chrono::milliseconds timeout);

 private:
  void StartAgent(int i, int gpus);

  TempDir dir_;
  std::string address_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
  int coordinator_starts_ = 0;
};

std::string Bin(const std::string& name);

}  // namespace baton::testing
