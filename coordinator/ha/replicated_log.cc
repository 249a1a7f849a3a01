#include "coordinator/ha/replicated_log.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <charconv>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "common/ids.h"
#include "proto/store.pb.h"

namespace baton::ha {
namespace {

etcdserverpb::Compare LeaderIs(const HaKeys& keys, uint64_t epoch) {
  return CreateRevisionIs(keys.leader(), static_cast<int64_t>(epoch));
}

bool Retryable(const absl::Status& s) { return absl::IsUnavailable(s); }

}  // namespace

HaKeys::HaKeys(std::string p) : prefix(std::move(p)) {
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
}

std::string HaKeys::log(uint64_t index) const { return log_dir() + PaddedKey(index); }

std::string HaKeys::chunk_of(uint64_t index, uint64_t epoch) const {
  return chunk_dir() + PaddedKey(index) + "/" + PaddedKey(epoch) + "/";
}

std::string HaKeys::chunk(uint64_t index, uint64_t epoch, uint32_t n) const {
  return chunk_of(index, epoch) + absl::StrFormat("%06u", n);
}

uint64_t HaKeys::IndexOf(std::string_view key) const {
  const std::string dir = log_dir();
  if (key.substr(0, dir.size()) != dir) return 0;
  key.remove_prefix(dir.size());
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), v);
  if (ec != std::errc() || ptr != key.data() + key.size()) return 0;
  return v;
}

absl::Status ReplicatedLog::FencedPut(const std::string& key, const std::string& value,
                                      uint64_t epoch, bool only_new) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = LeaderIs(keys_, epoch);
  if (only_new) *txn.add_compare() = CreateRevisionIs(key, 0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  txn.add_failure()->mutable_request_range()->set_key(keys_.leader());
  txn.add_failure()->mutable_request_range()->set_key(key);
  auto resp = etcd_->Txn(txn);
  if (!resp.ok()) return resp.status();
  if (resp->succeeded()) return absl::OkStatus();
  const auto& leader = resp->responses(0).response_range();
  const auto& existing = resp->responses(1).response_range();
  bool leads =
      leader.kvs_size() == 1 && leader.kvs(0).create_revision() == static_cast<int64_t>(epoch);
  if (!leads) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "deposed: the leader of epoch %d no longer leads (the election key is %s)", epoch,
        leader.kvs_size() == 0 ? "gone"
                               : absl::StrFormat("of epoch %d", leader.kvs(0).create_revision())));
  }
  // Leading, and the key exists: ours from an earlier try whose answer was lost, or not.
  if (existing.kvs_size() == 1 && existing.kvs(0).value() == value) return absl::OkStatus();
  return absl::FailedPreconditionError("HA log: " + key + " already holds another entry");
}

absl::Status ReplicatedLog::Append(uint64_t index, uint64_t epoch, std::string_view batch,
                                   absl::Time deadline) {
  v1::HaLogEntry entry;
  entry.set_epoch(epoch);
  entry.set_size(batch.size());
  entry.set_xxh64(XXH64(batch.data(), batch.size(), 0));
  uint32_t chunks = 0;
  if (batch.size() > chunk_bytes_) {
    chunks = static_cast<uint32_t>((batch.size() + chunk_bytes_ - 1) / chunk_bytes_);
  } else {
    entry.set_batch(std::string(batch));
  }
  entry.set_chunks(chunks);
  // Each piece is retried until it lands or the deadline (the leader's lease) passes; a
  // piece that landed before a lost answer is found and counted as written.
  auto put = [&](const std::string& key, const std::string& value, bool only_new) {
    for (absl::Duration backoff = absl::Milliseconds(20);;
         backoff = std::min(2 * backoff, absl::Milliseconds(500))) {
      absl::Status s = FencedPut(key, value, epoch, only_new);
      if (!Retryable(s)) return s;
      if (absl::Now() + backoff >= deadline) {
        return absl::UnavailableError(
            "HA log: etcd did not take entry " + std::to_string(index) +
            " before the leader's lease ran out: " + std::string(s.message()));
      }
      absl::SleepFor(backoff);
    }
  };
  for (uint32_t n = 0; n < chunks; ++n) {
    size_t off = static_cast<size_t>(n) * chunk_bytes_;
    std::string piece(batch.substr(off, std::min(chunk_bytes_, batch.size() - off)));
    if (absl::Status s = put(keys_.chunk(index, epoch, n), piece, /*only_new=*/false); !s.ok())
      return s;
  }
  return put(keys_.log(index), entry.SerializeAsString(), /*only_new=*/true);
}

absl::StatusOr<std::string> ReplicatedLog::ReadChunks(uint64_t index, uint64_t epoch,
                                                      uint32_t chunks) {
  etcdserverpb::RangeRequest req;
  std::string dir = keys_.chunk_of(index, epoch);
  req.set_key(dir);
  req.set_range_end(PrefixEnd(dir));
  auto resp = etcd_->Range(req);
  if (!resp.ok()) return resp.status();
  if (resp->kvs_size() != static_cast<int>(chunks)) {
    return absl::DataLossError(absl::StrFormat("HA log: entry %d has %d of its %d chunks", index,
                                               resp->kvs_size(), chunks));
  }
  std::string out;
  for (const auto& kv : resp->kvs()) out += kv.value();
  return out;
}

absl::StatusOr<std::vector<LogRecord>> ReplicatedLog::Read(uint64_t from, size_t max) {
  etcdserverpb::RangeRequest req;
  req.set_key(keys_.log(from));
  req.set_range_end(PrefixEnd(keys_.log_dir()));
  req.set_limit(static_cast<int64_t>(max));
  auto resp = etcd_->Range(req);
  if (!resp.ok()) return resp.status();
  std::vector<LogRecord> out;
  for (const auto& kv : resp->kvs()) {
    uint64_t index = keys_.IndexOf(kv.key());
    if (index != from + out.size()) {
      if (out.empty()) {
        return absl::OutOfRangeError(absl::StrFormat(
            "HA log: entry %d is no longer kept (the oldest is %d): this replica needs a "
            "snapshot",
            from, index));
      }
      break;
    }
    v1::HaLogEntry entry;
    if (!entry.ParseFromString(kv.value())) {
      return absl::DataLossError("HA log: " + kv.key() + " does not parse");
    }
    LogRecord r;
    r.index = index;
    r.epoch = entry.epoch();
    if (entry.chunks() > 0) {
      auto joined = ReadChunks(index, entry.epoch(), entry.chunks());
      if (!joined.ok()) return joined.status();
      r.batch = std::move(*joined);
    } else {
      r.batch = std::move(*entry.mutable_batch());
    }
    if (r.batch.size() != entry.size() ||
        XXH64(r.batch.data(), r.batch.size(), 0) != entry.xxh64()) {
      return absl::DataLossError(
          absl::StrFormat("HA log: entry %d does not match its length and hash", index));
    }
    out.push_back(std::move(r));
  }
  if (out.empty() && from > 1) {
    // Nothing at or after `from`: fine if `from` is the next to be written, not if the log
    // was truncated past it.
    auto first = FirstIndex();
    if (!first.ok()) return first.status();
    if (*first > from) {
      return absl::OutOfRangeError(absl::StrFormat(
          "HA log: entry %d is no longer kept (the oldest is %d): this replica needs a snapshot",
          from, *first));
    }
  }
  return out;
}

absl::StatusOr<uint64_t> ReplicatedLog::EdgeIndex(bool last) {
  etcdserverpb::RangeRequest req;
  req.set_key(keys_.log_dir());
  req.set_range_end(PrefixEnd(keys_.log_dir()));
  req.set_limit(1);
  req.set_keys_only(true);
  req.set_sort_target(etcdserverpb::RangeRequest::KEY);
  req.set_sort_order(last ? etcdserverpb::RangeRequest::DESCEND
                          : etcdserverpb::RangeRequest::ASCEND);
  auto resp = etcd_->Range(req);
  if (!resp.ok()) return resp.status();
  if (resp->kvs_size() == 0) return uint64_t{0};
  return keys_.IndexOf(resp->kvs(0).key());
}

absl::StatusOr<uint64_t> ReplicatedLog::LastIndex() { return EdgeIndex(/*last=*/true); }
absl::StatusOr<uint64_t> ReplicatedLog::FirstIndex() { return EdgeIndex(/*last=*/false); }

absl::Status ReplicatedLog::Truncate(uint64_t below, uint64_t epoch) {
  if (below <= 1) return absl::OkStatus();
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = LeaderIs(keys_, epoch);
  auto* logs = txn.add_success()->mutable_request_delete_range();
  logs->set_key(keys_.log_dir());
  logs->set_range_end(keys_.log(below));
  auto* chunks = txn.add_success()->mutable_request_delete_range();
  chunks->set_key(keys_.chunk_dir());
  chunks->set_range_end(keys_.chunk_dir() + PaddedKey(below));
  auto resp = etcd_->Txn(txn);
  if (!resp.ok()) return resp.status();
  if (!resp->succeeded()) {
    return absl::FailedPreconditionError("deposed: truncating the HA log as the leader of epoch " +
                                         std::to_string(epoch));
  }
  // Nothing reads past revisions: etcd keeps no history behind the window.
  absl::Status c = etcd_->Compact(resp->header().revision());
  if (!c.ok() && !absl::IsOutOfRange(c)) return c;  // OutOfRange: compacted already
  return absl::OkStatus();
}

}  // namespace baton::ha
