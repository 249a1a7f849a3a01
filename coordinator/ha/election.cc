#include "coordinator/ha/election.h"

#include "spdlog/spdlog.h"

namespace baton::ha {

absl::StatusOr<std::unique_ptr<Election>> Election::Start(EtcdClient* etcd, HaKeys keys,
                                                          v1::HaMember self, absl::Duration ttl,
                                                          Clock* clock) {
  std::unique_ptr<Election> e(new Election(etcd, std::move(keys), std::move(self), ttl, clock));
  if (absl::Status s = e->Grant(); !s.ok()) return s;
  e->keeper_ = std::thread([p = e.get()] { p->KeepAlive(); });
  return e;
}

Election::~Election() {
  int64_t lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    lease = lease_;
  }
  cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  if (lease != 0) (void)etcd_->LeaseRevoke(lease);
}

absl::Status Election::Grant() {
  absl::Time sent = clock_->Monotonic();
  auto granted = etcd_->LeaseGrant(ttl_);
  if (!granted.ok()) return granted.status();
  std::lock_guard<std::mutex> lock(mu_);
  lease_ = granted->id();
  valid_until_ = sent + absl::Seconds(granted->ttl());
  return absl::OkStatus();
}

void Election::KeepAlive() {
  std::unique_lock<std::mutex> lock(mu_);
  absl::Duration wait = ttl_ / 3;
  while (!clock_->WaitFor(cv_, lock, wait, [this] { return stopping_; })) {
    int64_t lease = lease_;
    bool leading = leading_;
    lock.unlock();
    absl::Time sent = clock_->Monotonic();
    auto ttl = etcd_->LeaseKeepAlive(lease);
    absl::Status regrant = absl::OkStatus();
    if (ttl.ok() && *ttl <= 0 && !leading) regrant = Grant();  // a standby's lease lapsed
    lock.lock();
    if (ttl.ok() && *ttl > 0 && lease == lease_) {
      valid_until_ = sent + absl::Seconds(*ttl);
      wait = ttl_ / 3;
    } else if (ttl.ok() && *ttl <= 0 && leading) {
      if (!lost_) spdlog::error("HA: this replica's lease {:x} expired: it no longer leads", lease);
      lost_ = true;
    } else {
      // Unanswered: try again soon, while the lease may still be saved.
      if (!ttl.ok()) spdlog::warn("HA: lease keep-alive failed: {}", ttl.status().ToString());
      if (!regrant.ok()) spdlog::warn("HA: lease grant failed: {}", regrant.ToString());
      wait = std::min(ttl_ / 3, absl::Milliseconds(250));
    }
  }
}

absl::StatusOr<std::optional<uint64_t>> Election::Campaign() {
  int64_t lease;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_) return absl::FailedPreconditionError("this replica's lease lapsed while it led");
    lease = lease_;
  }
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = CreateRevisionIs(keys_.leader(), 0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(keys_.leader());
  put->set_value(self_.SerializeAsString());
  put->set_lease(lease);
  txn.add_failure()->mutable_request_range()->set_key(keys_.leader());
  auto resp = etcd_->Txn(txn);
  if (!resp.ok()) return resp.status();
  uint64_t epoch = 0;
  if (resp->succeeded()) {
    epoch = static_cast<uint64_t>(resp->header().revision());
  } else {
    const auto& range = resp->responses(0).response_range();
    if (range.kvs_size() == 1 && range.kvs(0).lease() == lease) {
      epoch = static_cast<uint64_t>(range.kvs(0).create_revision());
    }
  }
  if (epoch == 0) return std::optional<uint64_t>();
  std::lock_guard<std::mutex> lock(mu_);
  if (lease != lease_) return std::optional<uint64_t>();  // regranted meanwhile: the key dies
  leading_ = true;
  return std::optional<uint64_t>(epoch);
}

absl::StatusOr<LeaderInfo> Election::Leader() {
  etcdserverpb::RangeRequest req;
  req.set_key(keys_.leader());
  auto resp = etcd_->Range(req);
  if (!resp.ok()) return resp.status();
  LeaderInfo info;
  if (resp->kvs_size() == 1) {
    info.epoch = static_cast<uint64_t>(resp->kvs(0).create_revision());
    if (!info.member.ParseFromString(resp->kvs(0).value())) {
      return absl::DataLossError("HA: the election key " + keys_.leader() + " does not parse");
    }
  }
  return info;
}

bool Election::LeaseAlive(absl::Duration margin) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !lost_ && clock_->Monotonic() + margin < valid_until_;
}

absl::Duration Election::LeaseRemaining() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost_) return absl::ZeroDuration();
  return valid_until_ - clock_->Monotonic();
}

absl::Status Election::Resign(uint64_t epoch) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = CreateRevisionIs(keys_.leader(), static_cast<int64_t>(epoch));
  txn.add_success()->mutable_request_delete_range()->set_key(keys_.leader());
  auto resp = etcd_->Txn(txn);
  if (!resp.ok()) return resp.status();
  if (!resp->succeeded()) {
    return absl::FailedPreconditionError("epoch " + std::to_string(epoch) + " no longer leads");
  }
  std::lock_guard<std::mutex> lock(mu_);
  leading_ = false;
  lost_ = true;  // the lease no longer stands for leadership: this replica stops acting
  return absl::OkStatus();
}

}  // namespace baton::ha
