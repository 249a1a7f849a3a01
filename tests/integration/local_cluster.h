// A real coordinator and real agents on loopback, each a child process on port 0 with a
// data dir under one temp dir, secured as a real cluster is (TLS under a CA of its own,
// a private munged, the test policy: tests/util/security.h); `baton` is run as a process
// too, as a test user. Used by the end-to-end tests and the benchmarks' fixtures.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/api.grpc.pb.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {

// What tests do with any running cluster: run the CLI against it and poll job states.
class ClusterClient {
 public:
  virtual ~ClusterClient() = default;
  const std::string& coordinator() const { return address_; }
  // Runs `baton ARGS…` as `user` (a test user: alice of tenant vision by default; kRoot is
  // the admin), with the cluster's CA and munged, and `env` on top.
  CommandResult Baton(std::vector<std::string> args, const std::string& user = kAlice,
                      std::map<std::string, std::string> env = {});
  // BATON_COORDINATOR, BATON_CA, BATON_MUNGE_SOCKET: what a client of this cluster needs.
  std::map<std::string, std::string> ClientEnv() const;
  // A job's record from `baton status --json` (as the admin); nullopt when it cannot be
  // read (the coordinator is down, say).
  std::optional<v1::Job> GetJob(uint64_t job);
  // A job's state name from `baton status --json`, "" when it cannot be read.
  std::string StateOf(uint64_t job);
  // True once the job is in `state`; gives up early when it ended in another final state.
  bool WaitForState(uint64_t job, const std::string& state,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // `baton status` and the last log lines of a job, for failure messages.
  std::string Describe(uint64_t job);
  bool WaitForReadyNodes(int n, std::chrono::milliseconds timeout);
  // The id in "Submitted job 17" (or "17" with -q) on the first line of `out`.
  static uint64_t SubmittedId(const std::string& out);

 protected:
  std::string address_;
  std::map<std::string, std::string> client_env_;  // BATON_CA, BATON_MUNGE_SOCKET
};

// The coordinator's agent timings in every test cluster (lease 4 s, heartbeat 500 ms, lost
// margin 2 s), as flags.
std::vector<std::string> TestCoordinatorTimings();

class LocalCluster : public ClusterClient {
 public:
  // Starts the coordinator (policy: TestPolicyYaml(), or `policy_yaml`) and `agents` agents
  // with `gpus` fake GPUs each, and waits until every agent is ready. Failures are
  // reported through gtest.
  LocalCluster(int agents, int gpus, const std::string& policy_yaml = "");
  ~LocalCluster() override;
  // The file agent `i`'s fake GPUs read their utilisation from ("UUID PERCENT" or
  // "* PERCENT" lines; none: unknown).
  std::string GpuUtilizationFile(int i) const;

  const std::string& dir() const { return dir_.path(); }
  // A directory (1777) every user's jobs may write in.
  std::string shared_dir() const { return dir_.path() + "/shared"; }
  TestSecurity& security() { return *security_; }
  // The public API over TLS verified against the cluster's CA, with the message limits
  // every client sets; calls carry no credential unless the test adds one.
  std::unique_ptr<v1::Coordinator::Stub> ApiStub();
  // A MUNGE credential of this process (root, the admin) from the cluster's munged, made
  // for `payload` (baton's audience by default) with `ttl` seconds (0: munged's default).
  std::string MungeCredential(std::string_view payload, int ttl = 0);
  std::string MungeCredential();

  // The web dashboard's host:port (--web-listen, TLS with the coordinator's certificate).
  const std::string& web_address() const { return web_address_; }

  // One more agent (named n<count+1>) with `gpus` fake GPUs and more agent flags (e.g.
  // --fake-mig), waited for until every agent is ready; false if it is not.
  bool AddAgent(int gpus, const std::vector<std::string>& flags);

  void KillCoordinator(int sig);
  void StartCoordinator();  // on the same data dir and port as before
  pid_t CoordinatorPid() const { return coordinator_ ? coordinator_->pid() : -1; }

 private:
  std::string web_address_;
  void StartAgent(int i, int gpus, const std::vector<std::string>& flags = {});

  TempDir dir_;
  std::unique_ptr<TestSecurity> security_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
  int coordinator_starts_ = 0;
};

// N network namespaces on a bridge, an agent in each, the coordinator in the root
// namespace: scripts/netns-cluster.sh under a name and subnet of its own.
class NetnsCluster : public ClusterClient {
 public:
  // `ok()` is false (with `why()`) when this machine cannot make namespaces (not root)
  // or the test users are missing. Without a --policy in `coordinator_args` the cluster
  // runs TestPolicyYaml().
  // `ha_replicas` > 0: the coordinator runs as that many replicas on a three-member etcd,
  // each in a namespace of its own (BATON_NETNS_HA, docs/ha.md); the CLI gets them all.
  // `env` adds settings of scripts/netns-cluster.sh (e.g. BATON_NETNS_LEAF_SIZE).
  NetnsCluster(int nodes, int gpus, std::string coordinator_args = "", std::string name_suffix = "",
               int ha_replicas = 0, std::map<std::string, std::string> env = {});
  ~NetnsCluster() override;
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  const std::string& state_dir() const { return state_; }
  // The cluster's name: node i's attempts live in cgroups under <name>/n<i>.
  const std::string& name() const { return name_; }
  // A directory (1777) every user's jobs may write in: checkpoint dirs of the tests.
  std::string shared_dir() const { return state_ + "/shared"; }
  // The address of node i (1-based) on the cluster network.
  std::string NodeAddress(int i) const;
  // scripts/netns-cluster.sh's verbs: `signal` the coordinator (or node i's agent), wait
  // until it is gone and start it again (same address, same data); cut node i off the
  // cluster network and put it back. True when the script succeeded.
  bool RestartCoordinator(const std::string& signal = "KILL");
  // The two halves of a restart, for an outage of any length (same address and data).
  bool StopCoordinator(const std::string& signal = "KILL");
  bool StartCoordinator();
  bool RestartAgent(int i, const std::string& signal = "KILL");
  // Node i's agent gets `signal` and is not started again (its jobs run on, orphaned).
  bool KillAgent(int i, const std::string& signal = "KILL");
  bool Partition(int i);
  bool Heal(int i);
  // HA: replica k (1-based) gets `signal` and is waited for / is started again.
  bool StopReplica(int k, const std::string& signal = "KILL");
  bool StartReplica(int k);
  // HA: the replica that leads now (1-based, as `baton admin ha status` names it c<k>);
  // 0 when none answers within `timeout`.
  int HaLeader(std::chrono::milliseconds timeout = std::chrono::seconds(20));

 private:
  std::map<std::string, std::string> ScriptEnv() const;
  bool Script(const std::vector<std::string>& args);
  bool ok_ = false;
  std::string why_, name_, subnet_, state_, coordinator_args_, policy_file_;
  int lock_fd_ = -1;
  int ha_replicas_ = 0;
  std::map<std::string, std::string> extra_env_;  // more scripts/netns-cluster.sh settings
  // Tears the cluster down should this process die without its destructor.
  std::unique_ptr<TeardownGuard> guard_;
};

std::string Bin(const std::string& name);

// train_mlp's "final weights hash H" in a log, "" when absent.
std::string TrainMlpFinalHash(const std::string& log);
// The wall clock in unix ms (what attempts, events and train_mlp's WITNESS record).
int64_t UnixNowMs();
// The hash an uninterrupted `ranks`-rank train_mlp run with `flags` ends with (mpirun here).
std::string UninterruptedTrainMlpHash(const std::vector<std::string>& flags, int ranks = 4);

}  // namespace baton::testing
