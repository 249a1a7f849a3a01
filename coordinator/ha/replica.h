// One coordinator replica of an HA cluster (--ha-etcd; docs/ha.md). Joining checks that
// the data dir and the etcd prefix belong to the same cluster. A standby follows the
// replicated log into its own RocksDB (warm: a takeover loads no bulk state) and
// campaigns whenever nobody leads; once it wins it applies the whole log and returns its
// epoch. As the leader it is the Committer's CommitLog: each change is appended to the
// log under its fencing token before the store and any reply. It watches its own lease
// and ends its leadership (the `lost` callback: main re-executes the process, which
// rejoins as a standby) as soon as the lease may have lapsed or an append is refused.
// Owned by main(); thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "coordinator/committer.h"
#include "coordinator/ha/election.h"
#include "coordinator/ha/etcd_client.h"
#include "coordinator/ha/replicated_log.h"
#include "coordinator/ha_control.h"
#include "coordinator/store.h"

namespace baton::ha {

struct ReplicaOptions {
  EtcdOptions etcd;
  std::string prefix = "/baton";                 // this cluster's keys in etcd
  absl::Duration ttl = absl::Seconds(5);         // the leader's lease (--ha-ttl)
  std::string name;                              // this replica's name (unique in the cluster)
  std::string address;                           // host:port clients and agents dial
  absl::Duration poll = absl::Milliseconds(50);  // how often a standby reads the log's tail
  uint64_t keep_entries = 10'000;                // the window of log entries kept in etcd
  size_t apply_batch = 256;                      // entries a standby writes per store commit
  // Ends this process's leadership; must not return (main re-executes the binary).
  std::function<void(const absl::Status&)> lost;
};

class Replica : public CommitLog, public HaControl {
 public:
  // Connects to etcd and checks (or, on an empty prefix, creates) the cluster's identity
  // against the data dir's: FailedPrecondition, saying what to do, when they differ.
  static absl::StatusOr<std::unique_ptr<Replica>> Join(ReplicaOptions options, Store* store,
                                                       Clock* clock);
  ~Replica() override;

  // Standby: follows the log and campaigns until this replica leads (its epoch, with every
  // entry applied) or `stop()` holds (Cancelled). OutOfRange, before it ever campaigns,
  // when the log no longer holds the entries this data dir needs, or never held the data
  // dir the cluster was seeded from: it needs a snapshot of the leader's store
  // (snapshot.h), and may not lead until it has one.
  absl::StatusOr<uint64_t> FollowUntilLeading(const std::function<bool()>& stop);

  // Who leads now, as etcd says (epoch 0: nobody).
  absl::StatusOr<LeaderInfo> Leader();
  const std::string& cluster_id() const { return cluster_id_; }

  // Who led when the follow loop last looked (a standby's refusals name it).
  LeaderInfo last_leader() const;
  uint64_t applied() const { return applied_.load(); }
  uint64_t epoch() const { return epoch_.load(); }  // 0 while a standby
  // Entries of the log not applied here, as of the last look (every second); 0 leading.
  uint64_t lag() const;
  // Leadership changes seen by this process: the leader's epoch moved on.
  uint64_t leader_changes() const { return leader_changes_.load(); }
  const std::string& name() const { return options_.name; }

  // CommitLog, for the leader's Committer.
  absl::StatusOr<uint64_t> Append(const StoreBatch& batch) override;
  [[noreturn]] void Lost(const absl::Status& why) override;

  // HaControl, for the leader's admin calls.
  absl::StatusOr<v1::HaStatusResponse> Status() override;
  // The election key goes now; the process re-executes (a standby) kStepDownExit later,
  // time enough for the answer to go out.
  absl::StatusOr<v1::HaStepDownResponse> StepDown(const std::string& by) override;
  static constexpr absl::Duration kStepDownExit = absl::Milliseconds(300);

 private:
  Replica(ReplicaOptions options, Store* store, Clock* clock);
  absl::Status CheckCluster();
  // Reads and applies up to apply_batch entries; how many.
  absl::StatusOr<size_t> ApplySome();
  void PublishMember();
  // The leader's watch over its lease and the log's window.
  void Guard();
  absl::Duration Margin() const;

  const ReplicaOptions options_;
  Store* const store_;
  Clock* const clock_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<ReplicatedLog> log_;
  std::unique_ptr<Election> election_;

  std::string cluster_id_;       // set by CheckCluster
  bool needs_snapshot_ = false;  // set by CheckCluster: joins a seeded cluster empty
  std::atomic<uint64_t> applied_{0};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> next_{0};      // the leader's next index
  std::atomic<uint64_t> log_last_{0};  // the log's newest index, as last read
  std::atomic<uint64_t> leader_changes_{0};
  uint64_t seen_epoch_ = 0;  // the follow loop's: the last leader's epoch it saw
  mutable std::mutex leader_mu_;
  LeaderInfo last_leader_;                              // guarded by leader_mu_
  absl::Time member_published_ = absl::InfinitePast();  // monotonic
  uint64_t truncated_below_ = 0;             // the Guard thread's: the log's first kept entry
  std::atomic<int64_t> stepped_down_ms_{0};  // monotonic ms of a step-down; 0: none

  std::mutex guard_mu_;
  std::condition_variable guard_cv_;
  bool stopping_ = false;  // guarded by guard_mu_
  std::thread guard_;
};

}  // namespace baton::ha
