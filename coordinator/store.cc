#include "coordinator/store.h"

#include <functional>

#include "common/ids.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/write_batch.h"

namespace baton {
namespace {

enum Family { kDefault = 0, kJobs, kEvents, kNodes, kMeta, kFamilies };
constexpr const char* kFamilyNames[kFamilies] = {"default", "jobs", "events", "nodes", "meta"};
constexpr char kNextJobIdKey[] = "next_job_id";
constexpr char kPolicyPrefix[] = "policy/";  // + zero-padded version: every version kept

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = std::string(what) + ": " + s.ToString();
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return absl::FailedPreconditionError(msg + " (is another coordinator using this data dir?)");
  }
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNoSpace()) return absl::ResourceExhaustedError(msg);
  return absl::UnavailableError(msg);
}

template <typename Msg>
absl::Status ParseInto(std::string_view value, std::string_view what, std::string_view key,
                       std::vector<Msg>* out) {
  Msg msg;
  if (!msg.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return absl::DataLossError("store: " + std::string(what) + " record '" + std::string(key) +
                               "' does not parse");
  }
  out->push_back(std::move(msg));
  return absl::OkStatus();
}

}  // namespace

void StoreBatch::Append(StoreBatch&& other) {
  for (auto& j : other.jobs) jobs.push_back(std::move(j));
  for (auto& e : other.events) events.push_back(std::move(e));
  for (auto& n : other.nodes) nodes.push_back(std::move(n));
  if (other.next_job_id) next_job_id = std::max(next_job_id.value_or(0), *other.next_job_id);
  if (other.policy) policy = std::move(other.policy);
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = true;
  db_opts.create_missing_column_families = true;
  db_opts.avoid_flush_during_shutdown = false;
  db_opts.max_background_jobs = 2;
  db_opts.keep_log_file_num = 4;
  if (options.env) db_opts.env = options.env;
  rocksdb::ColumnFamilyOptions cf_opts;
  cf_opts.write_buffer_size = 16 << 20;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const char* name : kFamilyNames) families.emplace_back(name, cf_opts);

  std::unique_ptr<Store> store(new Store());
  store->options_ = options;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_opts, path, families, &store->handles_, &raw);
  if (!s.ok()) return FromRocks(s, "open store at " + path);
  store->db_.reset(raw);
  return store;
}

Store::~Store() {
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  if (db_) db_->Close();
}

absl::Status Store::Commit(const StoreBatch& batch) {
  rocksdb::WriteBatch wb;
  std::string buf;
  for (const auto& job : batch.jobs) {
    buf.clear();
    if (job.events_size() > 0) {
      v1::Job copy = job;
      copy.clear_events();
      copy.SerializeToString(&buf);
    } else {
      job.SerializeToString(&buf);
    }
    wb.Put(handles_[kJobs], PaddedKey(job.id()), buf);
  }
  for (const auto& ev : batch.events) {
    wb.Put(handles_[kEvents], EventKey(ev.job_id(), ev.seq()), ev.SerializeAsString());
  }
  for (const auto& node : batch.nodes) {
    wb.Put(handles_[kNodes], node.name(), node.SerializeAsString());
  }
  if (batch.next_job_id) wb.Put(handles_[kMeta], kNextJobIdKey, PaddedKey(*batch.next_job_id));
  if (batch.policy) {
    wb.Put(handles_[kMeta], kPolicyPrefix + PaddedKey(batch.policy->version()),
           batch.policy->SerializeAsString());
  }
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return FromRocks(db_->Write(wo, &wb), "store commit");
}

absl::Status Store::LoadFamily(
    rocksdb::ColumnFamilyHandle* cf,
    const std::function<absl::Status(std::string_view, std::string_view)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto status = fn(std::string_view(it->key().data(), it->key().size()),
                     std::string_view(it->value().data(), it->value().size()));
    if (!status.ok()) return status;
  }
  return FromRocks(it->status(), "store scan");
}

absl::StatusOr<StoreSnapshot> Store::Load() const {
  StoreSnapshot snap;
  absl::Status s = LoadFamily(handles_[kJobs], [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "job", k, &snap.jobs);
  });
  if (!s.ok()) return s;
  s = LoadFamily(handles_[kEvents], [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "event", k, &snap.events);
  });
  if (!s.ok()) return s;
  s = LoadFamily(handles_[kNodes], [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "node", k, &snap.nodes);
  });
  if (!s.ok()) return s;
  std::string value;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), handles_[kMeta], kNextJobIdKey, &value);
  if (g.ok()) {
    size_t digits = value.find_first_not_of('0');
    auto id = digits == std::string::npos ? absl::StatusOr<uint64_t>(absl::DataLossError(""))
                                          : ParseJobId(value.substr(digits));
    if (!id.ok()) return absl::DataLossError("store: next_job_id '" + value + "' is corrupt");
    snap.next_job_id = *id;
  } else if (!g.IsNotFound()) {
    return FromRocks(g, "store read next_job_id");
  }
  // The newest policy version: the last key under the prefix.
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[kMeta]));
  std::string upper = std::string(kPolicyPrefix) + "~";
  it->SeekForPrev(upper);
  if (it->Valid() && it->key().starts_with(kPolicyPrefix)) {
    v1::PolicyVersion pv;
    if (!pv.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("store: policy record '" + it->key().ToString() +
                                 "' does not parse");
    }
    snap.policy = std::move(pv);
  }
  return snap;
}

}  // namespace baton
