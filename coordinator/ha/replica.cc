#include "coordinator/ha/replica.h"

#include <cstdlib>

#include "common/ids.h"
#include "coordinator/ha/batch_codec.h"
#include "spdlog/spdlog.h"

namespace baton::ha {

Replica::Replica(ReplicaOptions options, Store* store, Clock* clock)
    : options_(std::move(options)), store_(store), clock_(clock) {}

Replica::~Replica() {
  {
    std::lock_guard<std::mutex> lock(guard_mu_);
    stopping_ = true;
  }
  guard_cv_.notify_all();
  if (guard_.joinable()) guard_.join();
  election_.reset();  // revokes the lease: a standby takes over at once
}

absl::StatusOr<std::unique_ptr<Replica>> Replica::Join(ReplicaOptions options, Store* store,
                                                       Clock* clock) {
  if (options.name.empty() || !IsValidName(options.name)) {
    return absl::InvalidArgumentError("--ha-name '" + options.name +
                                      "' is not a valid replica name");
  }
  if (options.ttl < absl::Seconds(2)) {
    return absl::InvalidArgumentError("--ha-ttl must be at least 2s (etcd's shortest lease)");
  }
  std::unique_ptr<Replica> r(new Replica(std::move(options), store, clock));
  auto etcd = EtcdClient::Create(r->options_.etcd);
  if (!etcd.ok()) return etcd.status();
  r->etcd_ = std::move(*etcd);
  HaKeys keys(r->options_.prefix);
  if (keys.prefix.empty() || keys.prefix[0] != '/') {
    return absl::InvalidArgumentError("--ha-prefix '" + r->options_.prefix +
                                      "' must start with '/'");
  }
  r->log_ = std::make_unique<ReplicatedLog>(r->etcd_.get(), keys);
  if (absl::Status s = r->CheckCluster(); !s.ok()) return s;
  v1::HaMember self;
  self.set_name(r->options_.name);
  self.set_address(r->options_.address);
  auto election = Election::Start(r->etcd_.get(), keys, self, r->options_.ttl, clock);
  if (!election.ok()) return election.status();
  r->election_ = std::move(*election);
  return r;
}

absl::Status Replica::CheckCluster() {
  const HaKeys& keys = log_->keys();
  auto state = store_->ReadHaState();
  if (!state.ok()) return state.status();
  applied_ = state->applied;
  for (int attempt = 0; attempt < 2; ++attempt) {
    etcdserverpb::RangeRequest req;
    req.set_key(keys.cluster());
    auto got = etcd_->Range(req);
    if (!got.ok()) return got.status();
    if (got->kvs_size() == 1) {
      v1::HaCluster cluster;
      if (!cluster.ParseFromString(got->kvs(0).value())) {
        return absl::DataLossError("HA: " + keys.cluster() + " does not parse");
      }
      if (state->cluster_id == cluster.cluster_id()) {
        cluster_id_ = cluster.cluster_id();
        return absl::OkStatus();
      }
      if (!state->cluster_id.empty()) {
        return absl::FailedPreconditionError(
            "HA: this data dir belongs to cluster " + state->cluster_id + ", but " + keys.prefix +
            " in etcd holds the log of cluster " + cluster.cluster_id() +
            ": point --ha-prefix at this cluster's own prefix");
      }
      auto empty = store_->Empty();
      if (!empty.ok()) return empty.status();
      if (!*empty) {
        return absl::FailedPreconditionError(
            "HA: this data dir holds state of its own, but " + keys.prefix +
            " in etcd already holds the log of cluster " + cluster.cluster_id() +
            ": to join that cluster start from an empty data dir (or a restored backup of its "
            "leader); to turn this data dir into an HA cluster use a prefix of its own");
      }
      cluster_id_ = cluster.cluster_id();
      if (cluster.seeded()) {
        // The log does not hold the seed: this replica starts from the leader's store.
        spdlog::info(
            "HA: joining cluster {}, seeded from an existing data dir, from an empty one: "
            "a snapshot of the leader's store comes first",
            cluster.cluster_id());
        needs_snapshot_ = true;
        return absl::OkStatus();
      }
      spdlog::info("HA: joining cluster {} from an empty data dir", cluster.cluster_id());
      applied_ = 0;
      return store_->WriteHaState({cluster.cluster_id(), 0});
    }
    // No log under the prefix: this data dir creates it, with its state as the seed.
    if (!state->cluster_id.empty()) {
      return absl::FailedPreconditionError(
          "HA: this data dir belongs to cluster " + state->cluster_id + ", but " + keys.prefix +
          " in etcd holds no log: point --ha-prefix at the prefix that cluster was created "
          "under (a lost etcd is restored from its own snapshot, not re-created)");
    }
    auto empty = store_->Empty();
    if (!empty.ok()) return empty.status();
    v1::HaCluster cluster;
    cluster.set_cluster_id(RandomHex128());
    cluster.set_created_ms(clock_->NowMs());
    cluster.set_created_by(options_.name);
    cluster.set_seeded(!*empty);
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = CreateRevisionIs(keys.cluster(), 0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(keys.cluster());
    put->set_value(cluster.SerializeAsString());
    auto created = etcd_->Txn(txn);
    if (!created.ok()) return created.status();
    if (!created->succeeded()) continue;  // another replica created it first: join it
    spdlog::info("HA: created cluster {} under {} ({})", cluster.cluster_id(), keys.prefix,
                 cluster.seeded() ? "seeded from this data dir" : "empty");
    cluster_id_ = cluster.cluster_id();
    applied_ = 0;
    return store_->WriteHaState({cluster.cluster_id(), 0});
  }
  return absl::UnavailableError("HA: the cluster key changed twice while joining; try again");
}

absl::StatusOr<size_t> Replica::ApplySome() {
  uint64_t from = applied_.load() + 1;
  auto records = log_->Read(from, options_.apply_batch);
  if (!records.ok()) return records.status();
  if (records->empty()) return size_t{0};
  StoreBatch merged;
  for (auto& r : *records) {
    auto batch = DecodeBatch(r.batch);
    if (!batch.ok()) return batch.status();
    merged.Append(std::move(*batch));
  }
  uint64_t last = records->back().index;
  if (absl::Status s = store_->Commit(merged, last); !s.ok()) return s;
  applied_ = last;
  return records->size();
}

uint64_t Replica::lag() const {
  if (epoch_.load() != 0) return 0;
  uint64_t last = log_last_.load(), applied = applied_.load();
  return last > applied ? last - applied : 0;
}

void Replica::PublishMember() {
  absl::Time now = clock_->Monotonic();
  if (now - member_published_ < absl::Seconds(1)) return;
  member_published_ = now;
  if (epoch_.load() == 0) {
    if (auto last = log_->LastIndex(); last.ok()) log_last_ = *last;  // for the lag metric
  }
  v1::HaMember self;
  self.set_name(options_.name);
  self.set_address(options_.address);
  self.set_applied_index(applied_.load());
  self.set_updated_ms(clock_->NowMs());
  // Best effort: `baton admin ha status` reads these; a missed one is retried next second.
  (void)etcd_->Put(log_->keys().member(options_.name), self.SerializeAsString());
}

absl::StatusOr<uint64_t> Replica::FollowUntilLeading(const std::function<bool()>& stop) {
  if (needs_snapshot_) {
    return absl::OutOfRangeError("HA: the log does not hold the data dir cluster " + cluster_id_ +
                                 " was seeded from: this replica needs a snapshot");
  }
  absl::Time said_unavailable = absl::InfinitePast();
  while (!stop()) {
    auto applied = ApplySome();
    if (!applied.ok()) {
      if (!absl::IsUnavailable(applied.status())) return applied.status();
      if (clock_->Monotonic() - said_unavailable > absl::Seconds(10)) {
        spdlog::warn("HA: standby cannot read the log: {}", applied.status().ToString());
        said_unavailable = clock_->Monotonic();
      }
      absl::SleepFor(options_.poll);
      continue;
    }
    if (*applied == options_.apply_batch) continue;  // more to read at once
    auto leader = election_->Leader();
    if (leader.ok()) {
      {
        std::lock_guard<std::mutex> lock(leader_mu_);
        last_leader_ = *leader;
      }
      if (leader->epoch != 0) {
        if (seen_epoch_ != 0 && leader->epoch != seen_epoch_) ++leader_changes_;
        seen_epoch_ = leader->epoch;
      }
      if (leader->epoch == 0) {
        auto won = election_->Campaign();
        if (won.ok() && won->has_value()) {
          uint64_t epoch = **won;
          // Appends of older epochs fail from here on: what the log holds now is final.
          for (;;) {
            auto more = ApplySome();
            if (!more.ok()) return more.status();
            if (*more == 0) break;
          }
          auto last = log_->LastIndex();
          if (!last.ok()) return last.status();
          if (*last > applied_.load()) {
            return absl::InternalError("HA: the log ends at " + std::to_string(*last) +
                                       " past the applied " + std::to_string(applied_.load()));
          }
          epoch_ = epoch;
          next_ = applied_.load() + 1;
          if (seen_epoch_ != 0) ++leader_changes_;  // it took over from another
          {
            std::lock_guard<std::mutex> lock(leader_mu_);
            last_leader_.epoch = epoch;
            last_leader_.member.set_name(options_.name);
            last_leader_.member.set_address(options_.address);
          }
          spdlog::info("HA: {} leads, epoch {}, log applied up to {}", options_.name, epoch,
                       applied_.load());
          guard_ = std::thread([this] { Guard(); });
          return epoch;
        }
        if (!won.ok()) spdlog::warn("HA: campaign failed: {}", won.status().ToString());
      }
    }
    PublishMember();
    absl::SleepFor(options_.poll);
  }
  return absl::CancelledError("stopping");
}

absl::StatusOr<LeaderInfo> Replica::Leader() { return election_->Leader(); }

LeaderInfo Replica::last_leader() const {
  std::lock_guard<std::mutex> lock(leader_mu_);
  return last_leader_;
}

absl::Duration Replica::Margin() const {
  return std::max(absl::Milliseconds(100), options_.ttl / 20);
}

absl::StatusOr<uint64_t> Replica::Append(const StoreBatch& batch) {
  if (!election_->LeaseAlive(Margin())) {
    return absl::FailedPreconditionError("HA: this leader's lease may have lapsed");
  }
  uint64_t index = next_.load();
  absl::Time deadline = absl::Now() + election_->LeaseRemaining() - Margin();
  absl::Status s = log_->Append(index, epoch_.load(), EncodeBatch(batch), deadline);
  if (!s.ok()) return s;
  next_ = index + 1;
  applied_ = index;
  return index;
}

void Replica::Lost(const absl::Status& why) {
  spdlog::critical("HA: {} stops leading (epoch {}): {}", options_.name, epoch_.load(),
                   why.ToString());
  if (options_.lost) options_.lost(why);
  std::_Exit(75);  // EX_TEMPFAIL: the supervisor starts it again, as a standby
}

absl::StatusOr<v1::HaStatusResponse> Replica::Status() {
  const HaKeys& keys = log_->keys();
  v1::HaStatusResponse out;
  out.set_epoch(epoch_.load());
  out.set_leader(options_.name);
  etcdserverpb::RangeRequest req;
  req.set_key(keys.cluster());
  auto cluster = etcd_->Range(req);
  if (!cluster.ok()) return cluster.status();
  v1::HaCluster c;
  if (cluster->kvs_size() == 1 && c.ParseFromString(cluster->kvs(0).value())) {
    out.set_cluster_id(c.cluster_id());
  }
  auto last = log_->LastIndex();
  if (!last.ok()) return last.status();
  auto first = log_->FirstIndex();
  if (!first.ok()) return first.status();
  out.set_log_index(std::max(*last, applied_.load()));
  out.set_log_first_index(*first);
  req.set_key(keys.member_dir());
  req.set_range_end(PrefixEnd(keys.member_dir()));
  auto members = etcd_->Range(req);
  if (!members.ok()) return members.status();
  for (const auto& kv : members->kvs()) {
    v1::HaMember m;
    if (!m.ParseFromString(kv.value())) continue;
    v1::HaReplica* r = out.add_replicas();
    r->set_name(m.name());
    r->set_address(m.address());
    r->set_leader(m.name() == options_.name);
    r->set_applied_index(r->leader() ? applied_.load() : m.applied_index());
    r->set_lag(out.log_index() > r->applied_index() ? out.log_index() - r->applied_index() : 0);
    r->set_updated_ms(r->leader() ? clock_->NowMs() : m.updated_ms());
  }
  for (size_t i = 0; i < etcd_->endpoints().size(); ++i) {
    v1::HaEtcdEndpoint* e = out.add_etcd();
    e->set_endpoint(etcd_->endpoints()[i]);
    auto st = etcd_->MemberStatus(i);
    if (!st.ok()) {
      e->set_error(std::string(st.status().message()));
      continue;
    }
    e->set_healthy(st->leader() != 0);
    e->set_leader(st->leader() == st->header().member_id());
    e->set_db_size_bytes(st->dbsize());
    if (st->leader() == 0) e->set_error("no raft leader");
  }
  return out;
}

absl::StatusOr<v1::HaStepDownResponse> Replica::StepDown(const std::string& by) {
  uint64_t epoch = epoch_.load();
  if (absl::Status s = election_->Resign(epoch); !s.ok()) return s;
  spdlog::warn("HA: {} steps down (epoch {}), asked by {}: a standby takes over", options_.name,
               epoch, by);
  stepped_down_ms_ = absl::ToInt64Milliseconds(clock_->Monotonic() - absl::UnixEpoch());
  v1::HaStepDownResponse out;
  out.set_leader(options_.name);
  out.set_epoch(epoch);
  return out;
}

void Replica::Guard() {
  std::unique_lock<std::mutex> lock(guard_mu_);
  while (!guard_cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return stopping_; })) {
    lock.unlock();
    if (int64_t at = stepped_down_ms_.load(); at != 0) {
      // Resigned: nothing more is appended (the key is gone); go once the answer is out.
      int64_t now = absl::ToInt64Milliseconds(clock_->Monotonic() - absl::UnixEpoch());
      if (now - at >= absl::ToInt64Milliseconds(kStepDownExit)) {
        Lost(absl::CancelledError("stepped down"));
      }
      lock.lock();
      continue;
    }
    if (!election_->LeaseAlive(Margin())) {
      Lost(absl::FailedPreconditionError("its lease may have lapsed (etcd unreachable for " +
                                         absl::FormatDuration(options_.ttl) + ")"));
    }
    PublishMember();
    uint64_t next = next_.load();
    if (next > options_.keep_entries + options_.keep_entries / 10) {
      // Keep the last keep_entries entries; truncate in steps of a tenth of the window.
      uint64_t below = next - options_.keep_entries;
      if (below >= truncated_below_ + options_.keep_entries / 10) {
        absl::Status s = log_->Truncate(below, epoch_.load());
        if (s.ok()) {
          truncated_below_ = below;
        } else if (absl::IsFailedPrecondition(s)) {
          Lost(s);
        } else {
          spdlog::warn("HA: truncating the log below {}: {}", below, s.ToString());
        }
      }
    }
    lock.lock();
  }
}

}  // namespace baton::ha
