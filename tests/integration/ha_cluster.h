// Coordinator replicas on loopback (HA, docs/ha.md): a real etcd (tests/util/etcd.h),
// N baton-coordinator processes with --ha-etcd on fixed ports and data dirs of their own,
// and agents given every replica's address; secured as LocalCluster is. The CLI (Baton)
// is given the whole replica list, as a researcher's BATON_COORDINATOR would be.
// Thread-compatible (Baton may run from several threads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/local_cluster.h"
#include "tests/util/etcd.h"

namespace baton::testing {

// What a leader's kill -9 under a stream of submits did (KillLeaderUnderSubmits).
struct FailoverResult {
  double failover_s = -1;  // kill -9 to the acknowledgement of the first submit made after it
  size_t acked = 0;        // submits acknowledged, in all
  size_t acked_before_kill = 0;
  size_t acked_api = 0;   // of them, submits through the API (the rest: the CLI)
  size_t failed = 0;      // submits that exited non-zero (never acknowledged)
  size_t lost = 0;        // acknowledged, but not stored under their id and name
  size_t duplicates = 0;  // an id acknowledged twice, or one submit stored twice
  size_t restarted = 0;   // running jobs whose process or attempt changed
  int old_leader = -1;
  int new_leader = -1;
  std::string detail;  // what was lost, duplicated or restarted, for messages
};

struct HaClusterOptions {
  int replicas = 2;
  int agents = 0;
  std::string ttl = "2s";  // --ha-ttl
  int etcd_members = 1;
  // That replica reaches etcd only through TCP proxies of its own (socat), which
  // CutOffFromEtcd and HealEtcd stop and start: it alone loses etcd. -1: none.
  int proxied = -1;
  std::vector<std::string> replica_flags;  // more flags for every replica
  // > 0: replica 0 first runs as a single coordinator (no --ha-etcd) and takes this many
  // pending jobs (named seed0, seed1, …); then it starts with --ha-etcd on that data dir
  // (the cluster's seed) and leads before the other replicas start, with empty data dirs.
  int seed_jobs = 0;
};

// Every job the cluster lists now (any state): id -> name.
std::map<uint64_t, std::string> ListedJobs(ClusterClient& c);

class HaCluster : public ClusterClient {
 public:
  // ok() false (with why()) when etcd is missing or nothing came up.
  explicit HaCluster(HaClusterOptions options);
  HaCluster(int replicas, int agents, const std::string& ttl = "2s", int etcd_members = 1,
            int proxied = -1)
      : HaCluster(HaClusterOptions{replicas, agents, ttl, etcd_members, proxied, {}, 0}) {}
  ~HaCluster() override;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& dir() const { return dir_.path(); }
  // A directory (1777) every user's jobs may write in.
  std::string shared_dir() const { return dir_.path() + "/shared"; }
  EtcdCluster& etcd() { return *etcd_; }
  TestSecurity& security() { return *security_; }
  int replicas() const { return static_cast<int>(replicas_.size()); }
  std::string ReplicaAddress(int i) const;
  pid_t ReplicaPid(int i) const;
  // What replica i's current process has logged (its stderr).
  std::string ReplicaLog(int i) const;

  // The replica that leads now (the one whose `baton nodes` answers), -1 when none does
  // within `timeout`.
  int Leader(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // `sig` to replica i; for SIGKILL it is waited for and stays down until StartReplica.
  void SignalReplica(int i, int sig);
  void StartReplica(int i) { StartReplica(i, /*ha=*/true); }
  // Replica i's `baton admin ha status --json` entry ({} when absent), as the leader says.
  nlohmann::json ReplicaStatus(int i);
  // The proxied replica's path to etcd: cut (its connections too) and restored.
  void CutOffFromEtcd();
  void HealEtcd();

  // Starts `n` jobs of one GPU that record their pid once, and waits until they run.
  // False (with why in `detail`) when they did not.
  bool StartRunningJobs(int n, std::string* detail);
  // "" while every job StartRunningJobs started still runs its first attempt's process;
  // else what changed. `ask` false: the processes only (no replica may be leading).
  std::string RunningJobsChanged(bool ask = true);
  // Submits from `threads` threads with the CLI and `api_threads` more through the API
  // (a service token, a channel over the replica list, retrying UNAVAILABLE with the same
  // idempotency key as the CLI does); after `before_kill` kills the leader with SIGKILL,
  // waits for the next one and `after` more acknowledged submits, starts the killed
  // replica again (a standby), stops; then checks every acknowledged submit against the
  // new leader's jobs, and the running jobs' pids and attempts.
  FailoverResult KillLeaderUnderSubmits(int threads, std::chrono::milliseconds before_kill,
                                        size_t after, int api_threads = 1);

 private:
  struct RunningJob {
    uint64_t id = 0;
    std::string pid_file;
    std::string pid;
  };
  std::vector<RunningJob> running_;
  void StartAgent(int i);
  void StartReplica(int i, bool ha);
  // One API submit as a client of the replica list would make it: the job's id, 0 when
  // it was not acknowledged.
  uint64_t ApiSubmit(const std::string& name);
  std::string api_token_;  // a service token for baton-alice in vision, made on first use
  bool SeedFromASingleCoordinator(int jobs);
  std::string EtcdEndpointsOf(int i) const;
  TempDir dir_;
  std::string why_;
  std::unique_ptr<TestSecurity> security_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::string ttl_;
  std::vector<std::string> replica_flags_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<Subprocess>> replicas_;
  std::vector<int> starts_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
  int proxied_ = -1;
  int rounds_ = 0;  // KillLeaderUnderSubmits calls, which name their submits apart
  std::vector<std::pair<int, int>> proxy_ports_;  // (listen, etcd member's) per member
  std::vector<std::unique_ptr<Subprocess>> proxies_;
};

}  // namespace baton::testing
