// Leader election among coordinator replicas on an etcd lease (docs/ha.md). Each replica
// holds a lease of --ha-ttl, kept alive every third of it on a thread of its own; the
// leader is the replica whose lease carries <prefix>/leader, and its epoch (the fencing
// token every log append compares) is that key's create revision. The leader acts only
// while its lease is certainly alive: until the send time of its last acknowledged
// keep-alive plus the TTL etcd granted, on the monotonic clock, which etcd's own expiry
// (counted from when it received that keep-alive) can only follow.
// Used by Replica. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "coordinator/ha/etcd_client.h"
#include "coordinator/ha/replicated_log.h"
#include "proto/store.pb.h"

namespace baton::ha {

// Who leads: epoch 0 when nobody does.
struct LeaderInfo {
  uint64_t epoch = 0;
  v1::HaMember member;
};

class Election {
 public:
  // Grants this replica's lease and starts keeping it alive.
  static absl::StatusOr<std::unique_ptr<Election>> Start(EtcdClient* etcd, HaKeys keys,
                                                         v1::HaMember self, absl::Duration ttl,
                                                         Clock* clock);
  // Stops the keep-alives and revokes the lease: the election key goes with it, so a
  // standby takes over at once rather than after the TTL.
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // Becomes leader if nobody is: creates the election key on our lease. The epoch when
  // this replica leads (now, or already), nullopt when another one does.
  absl::StatusOr<std::optional<uint64_t>> Campaign();
  // Who leads now (read from etcd).
  absl::StatusOr<LeaderInfo> Leader();
  // True while the lease this replica won with is certainly alive (see above), with
  // `margin` to spare. False for good once that lease lapsed or was lost.
  bool LeaseAlive(absl::Duration margin = absl::ZeroDuration()) const;
  // How long the lease certainly lives on (zero or less when it may have lapsed).
  absl::Duration LeaseRemaining() const;
  // Deletes the election key if this replica's epoch still holds it (a step-down).
  absl::Status Resign(uint64_t epoch);
  absl::Duration ttl() const { return ttl_; }

 private:
  Election(EtcdClient* etcd, HaKeys keys, v1::HaMember self, absl::Duration ttl, Clock* clock)
      : etcd_(etcd), keys_(std::move(keys)), self_(std::move(self)), ttl_(ttl), clock_(clock) {}
  absl::Status Grant();
  void KeepAlive();

  EtcdClient* const etcd_;
  const HaKeys keys_;
  const v1::HaMember self_;
  const absl::Duration ttl_;
  Clock* const clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int64_t lease_ = 0;                              // guarded by mu_
  absl::Time valid_until_ = absl::InfinitePast();  // monotonic; guarded by mu_
  bool leading_ = false;  // guarded by mu_: lease_ carries the election key
  bool lost_ = false;     // guarded by mu_: the lease we led with lapsed (never cleared)
  std::thread keeper_;
};

}  // namespace baton::ha
