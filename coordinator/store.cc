#include "coordinator/store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <iterator>
#include <thread>

#include "common/ids.h"
#include "common/status.h"
#include "coordinator/packed_spec.h"
#include "coordinator/usage/merge_operator.h"
#include "proto/rpc_util.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_batch.h"

namespace baton {
namespace {

// `live` indexes the unfinished jobs (id -> ""), the only ones loaded at start-up;
// `ended` the finished ones by end time ("<finished_ms>/<id>" -> v1::EndedEntry, or "" in
// stores written before it), for retention and history.
enum Family {
  kDefault = 0,
  kJobs,
  kEvents,
  kNodes,
  kMeta,
  kLog,
  kLogJob,
  kLive,
  kEnded,
  kUsage,  // the usage rollup: "<day>/<tenant>" -> v1::UsageRecord, added by merges
  kFamilies
};
constexpr const char* kFamilyNames[kFamilies] = {"default", "jobs",    "events", "nodes", "meta",
                                                 "log",     "log_job", "live",   "ended", "usage"};
constexpr char kNextJobIdKey[] = "next_job_id";
constexpr char kPolicyPrefix[] = "policy/";
constexpr char kUsageKey[] = "fair_share_usage";  // + zero-padded version: every version kept
constexpr char kTokenPrefix[] = "token/";         // + token id
constexpr char kSecretPrefix[] = "secret/";       // + zero-padded job id
constexpr char kArrayPrefix[] = "array/";         // + zero-padded array id
// Present once `live` and `ended` index every job (stores older than the indexes get them
// built at their first open).
constexpr char kIndexedKey[] = "indexed/live_ended";
constexpr char kHaClusterKey[] = "ha/cluster_id";
constexpr char kHaAppliedKey[] = "ha/applied";  // zero-padded log index

std::string UsageKey(int64_t day, const std::string& tenant) {
  return PaddedKey(static_cast<uint64_t>(std::max<int64_t>(day, 0))) + "/" + tenant;
}

std::string EndedKey(int64_t finished_ms, uint64_t id) {
  return PaddedKey(static_cast<uint64_t>(std::max<int64_t>(finished_ms, 0))) + "/" + PaddedKey(id);
}

// The index entries for `job` as stored now: one of live or ended.
void IndexJob(const v1::Job& job, rocksdb::WriteBatch& wb,
              const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
  if (IsTerminal(job.state())) {
    wb.Delete(handles[kLive], PaddedKey(job.id()));
    v1::EndedEntry entry;
    entry.set_user(job.user());
    entry.set_tenant(job.spec().tenant());
    entry.set_state(job.state());
    wb.Put(handles[kEnded], EndedKey(job.finished_ms(), job.id()), entry.SerializeAsString());
  } else {
    wb.Put(handles[kLive], PaddedKey(job.id()), "");
  }
}

template <typename Msg>
absl::StatusOr<Msg> Parse(std::string_view value, std::string_view what, std::string_view key) {
  Msg msg;
  if (!msg.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return absl::DataLossError("store: " + std::string(what) + " record '" + std::string(key) +
                               "' does not parse");
  }
  return msg;
}

// Records of older versions held attempts' exec secrets in the job itself: a field public
// messages no longer know, which must never be relayed to a client.
// (Message::DiscardUnknownFields would do, but through reflection it turns every map into
// its repeated form and keeps both: 1.7 KiB more per job of a typical spec, resident.)
// Maps are skipped (Job's map strings to strings or numbers: no unknown fields inside),
// and no message gets an unknown-field set it did not have.
void DiscardUnknown(google::protobuf::Message& msg) {
  const google::protobuf::Reflection* r = msg.GetReflection();
  if (!r->GetUnknownFields(msg).empty()) r->MutableUnknownFields(&msg)->Clear();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(msg, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) {
      continue;
    }
    if (!f->is_repeated()) {
      DiscardUnknown(*r->MutableMessage(&msg, f));
      continue;
    }
    for (int i = 0, n = r->FieldSize(msg, f); i < n; ++i) {
      DiscardUnknown(*r->MutableRepeatedMessage(&msg, f, i));
    }
  }
}

absl::StatusOr<v1::Job> ParseJob(std::string_view value, std::string_view key) {
  auto job = Parse<v1::Job>(value, "job", key);
  // The walk over the wire form costs a tenth of the walk over the parsed message.
  if (job.ok() && HasUnknownFields(value, v1::Job::descriptor())) DiscardUnknown(*job);
  return job;
}

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
  auto msg = Parse<Msg>(value, what, key);
  if (!msg.ok()) return msg.status();
  out->push_back(std::move(*msg));
  return absl::OkStatus();
}

// The id of a zero-padded job key; 0 (no job's) when it is not one.
uint64_t IdOfKey(const rocksdb::Slice& key) {
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  return ec == std::errc() && end == key.data() + key.size() ? id : 0;
}

// A forward iterator over one family that moves to keys in increasing order: a few Next()s
// when the key is near (dense ids), a Seek when it is far.
class Cursor {
 public:
  explicit Cursor(rocksdb::Iterator* it) : it_(it) { it_->SeekToFirst(); }
  // Positions at the first key >= `target` (never backwards); false past the end.
  bool MoveTo(std::string_view target) {
    const rocksdb::Slice want(target.data(), target.size());
    for (int step = 0; it_->Valid() && it_->key().compare(want) < 0; ++step) {
      if (step == kNextsBeforeSeek) {
        it_->Seek(want);
        break;
      }
      it_->Next();
    }
    return it_->Valid();
  }
  bool valid() const { return it_->Valid(); }
  void Next() { it_->Next(); }
  std::string_view key() const { return {it_->key().data(), it_->key().size()}; }
  std::string_view value() const { return {it_->value().data(), it_->value().size()}; }
  rocksdb::Status status() const { return it_->status(); }

 private:
  static constexpr int kNextsBeforeSeek = 8;
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

void StoreBatch::Append(StoreBatch&& other) {
  for (auto& j : other.jobs) jobs.push_back(std::move(j));
  for (auto& e : other.events) events.push_back(std::move(e));
  for (auto& e : other.log) log.push_back(std::move(e));
  for (auto& n : other.nodes) nodes.push_back(std::move(n));
  if (other.next_job_id) next_job_id = std::max(next_job_id.value_or(0), *other.next_job_id);
  if (other.policy) policy = std::move(other.policy);
  if (other.usage) usage = std::move(other.usage);
  for (auto& t : other.tokens) tokens.push_back(std::move(t));
  for (auto& s : other.secrets) secrets.push_back(std::move(s));
  for (uint64_t id : other.deleted_jobs) deleted_jobs.push_back(id);
  for (auto& a : other.arrays) arrays.push_back(std::move(a));
  for (uint64_t id : other.deleted_arrays) deleted_arrays.push_back(id);
  for (auto& d : other.usage_deltas) usage_deltas.push_back(std::move(d));
  usage_before_day = std::max(usage_before_day, other.usage_before_day);
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
  if (options.bulk) {  // fewer, bigger flushes; compaction left for the first real open
    cf_opts.write_buffer_size = 128 << 20;
    cf_opts.disable_auto_compactions = true;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const char* name : kFamilyNames) families.emplace_back(name, cf_opts);
  families[kUsage].options.merge_operator = usage::NewMergeOperator();
  // Small varint records read a year at a time: no decompression on the query's path, and
  // a block cache of their own that holds a year of a large cluster's rollup (RocksDB 7's
  // default is 8 MiB per family; a year of 1,000 users in two classes is ~25 MiB).
  families[kUsage].options.compression = rocksdb::kNoCompression;
  {
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = rocksdb::NewLRUCache(64 << 20);
    families[kUsage].options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }

  std::unique_ptr<Store> store(new Store());
  store->options_ = options;
  store->path_ = path;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_opts, path, families, &store->handles_, &raw);
  if (!s.ok()) return FromRocks(s, "open store at " + path);
  store->db_.reset(raw);
  if (absl::Status indexed = store->BuildIndexes(); !indexed.ok()) return indexed;
  return store;
}

absl::Status Store::BuildIndexes() {
  std::string marker;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), handles_[kMeta], kIndexedKey, &marker);
  if (g.ok()) return absl::OkStatus();
  if (!g.IsNotFound()) return FromRocks(g, "store read " + std::string(kIndexedKey));
  // A store written before the indexes (or a new one): every job is indexed once, in
  // batches, then the marker; an interrupted build is redone whole at the next open.
  rocksdb::WriteBatch wb;
  size_t jobs = 0;
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  absl::Status s = LoadFamily(handles_[kJobs], [&](std::string_view k, std::string_view v) {
    auto job = ParseJob(v, k);
    if (!job.ok()) return job.status();
    IndexJob(*job, wb, handles_);
    if (++jobs % 10'000 == 0) {
      if (absl::Status w = FromRocks(db_->Write(wo, &wb), "store index"); !w.ok()) return w;
      wb.Clear();
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  wb.Put(handles_[kMeta], kIndexedKey, "1");
  return FromRocks(db_->Write(wo, &wb), "store index");
}

Store::~Store() {
  if (db_ && options_.bulk) {
    rocksdb::FlushOptions flush;
    db_->Flush(flush, handles_);  // without a WAL, the memtables are all there is
  }
  for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  if (db_) db_->Close();
}

absl::Status Store::Checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!s.ok()) return FromRocks(s, "checkpoint of " + path_);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush 0: the memtables are flushed first, so the copy needs no WAL replay
  // of what it holds.
  s = checkpoint->CreateCheckpoint(dir, /*log_size_for_flush=*/0);
  return FromRocks(s, "checkpoint of " + path_ + " into " + dir);
}

uint64_t Store::FreeBytes() const {
  struct statvfs st {};
  if (statvfs(path_.c_str(), &st) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

absl::Status Store::Commit(const StoreBatch& batch, uint64_t ha_index) {
  rocksdb::WriteBatch wb;
  if (ha_index > 0) wb.Put(handles_[kMeta], kHaAppliedKey, PaddedKey(ha_index));
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
    IndexJob(job, wb, handles_);
  }
  for (const auto& ev : batch.events) {
    wb.Put(handles_[kEvents], EventKey(ev.job_id(), ev.seq()), ev.SerializeAsString());
  }
  for (const auto& ev : batch.log) {
    buf = ev.SerializeAsString();
    wb.Put(handles_[kLog], PaddedKey(ev.log_seq()), buf);
    if (ev.job_id() != 0) wb.Put(handles_[kLogJob], EventKey(ev.job_id(), ev.log_seq()), buf);
  }
  for (const auto& node : batch.nodes) {
    wb.Put(handles_[kNodes], node.name(), node.SerializeAsString());
  }
  if (batch.next_job_id) wb.Put(handles_[kMeta], kNextJobIdKey, PaddedKey(*batch.next_job_id));
  if (batch.usage) wb.Put(handles_[kMeta], kUsageKey, batch.usage->SerializeAsString());
  if (batch.policy) {
    wb.Put(handles_[kMeta], kPolicyPrefix + PaddedKey(batch.policy->version()),
           batch.policy->SerializeAsString());
  }
  for (const auto& t : batch.tokens) {
    wb.Put(handles_[kMeta], kTokenPrefix + t.id(), t.SerializeAsString());
  }
  for (const auto& s : batch.secrets) {
    wb.Put(handles_[kMeta], kSecretPrefix + PaddedKey(s.job_id()), s.SerializeAsString());
  }
  for (const auto& a : batch.arrays) {
    wb.Put(handles_[kMeta], kArrayPrefix + PaddedKey(a.id()), a.SerializeAsString());
  }
  for (uint64_t id : batch.deleted_arrays) wb.Delete(handles_[kMeta], kArrayPrefix + PaddedKey(id));
  for (const auto& d : batch.usage_deltas) {
    wb.Merge(handles_[kUsage], UsageKey(d.day(), d.tenant()), d.record().SerializeAsString());
  }
  if (batch.usage_before_day > 0) {
    wb.DeleteRange(handles_[kUsage], "", PaddedKey(static_cast<uint64_t>(batch.usage_before_day)));
  }
  for (uint64_t id : batch.deleted_jobs) {
    // "<job>/" .. "<job>0" spans every "<job>/<seq>" key ('0' follows '/').
    std::string from = PaddedKey(id) + "/", to = PaddedKey(id) + "0";
    std::string record;
    rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), handles_[kJobs], PaddedKey(id), &record);
    if (g.ok()) {
      auto job = ParseJob(record, PaddedKey(id));
      if (!job.ok()) return job.status();
      wb.Delete(handles_[kEnded], EndedKey(job->finished_ms(), id));
    } else if (!g.IsNotFound()) {
      return FromRocks(g, "store read of a job to delete");
    }
    wb.Delete(handles_[kLive], PaddedKey(id));
    wb.Delete(handles_[kJobs], PaddedKey(id));
    wb.DeleteRange(handles_[kEvents], from, to);
    wb.Delete(handles_[kMeta], kSecretPrefix + PaddedKey(id));
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), handles_[kLogJob]));
    for (it->Seek(from); it->Valid() && it->key().starts_with(from); it->Next()) {
      wb.Delete(handles_[kLog], it->key().ToString().substr(from.size()));
    }
    if (!it->status().ok()) return FromRocks(it->status(), "store scan of a job's log");
    wb.DeleteRange(handles_[kLogJob], from, to);
  }
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync && !options_.bulk;
  wo.disableWAL = options_.bulk;
  return FromRocks(db_->Write(wo, &wb), "store commit");
}

absl::StatusOr<Store::HaState> Store::ReadHaState() const {
  HaState state;
  std::string value;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), handles_[kMeta], kHaClusterKey, &value);
  if (g.ok()) {
    state.cluster_id = value;
  } else if (!g.IsNotFound()) {
    return FromRocks(g, "store read " + std::string(kHaClusterKey));
  }
  g = db_->Get(rocksdb::ReadOptions(), handles_[kMeta], kHaAppliedKey, &value);
  if (g.ok()) {
    size_t digits = value.find_first_not_of('0');
    if (digits != std::string::npos) {
      auto n = ParseJobId(value.substr(digits));
      if (!n.ok()) return absl::DataLossError("store: ha/applied '" + value + "' is corrupt");
      state.applied = *n;
    }
  } else if (!g.IsNotFound()) {
    return FromRocks(g, "store read " + std::string(kHaAppliedKey));
  }
  return state;
}

absl::Status Store::WriteHaState(const HaState& state) {
  rocksdb::WriteBatch wb;
  wb.Put(handles_[kMeta], kHaClusterKey, state.cluster_id);
  wb.Put(handles_[kMeta], kHaAppliedKey, PaddedKey(state.applied));
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync;
  return FromRocks(db_->Write(wo, &wb), "store write of the HA state");
}

absl::StatusOr<bool> Store::Empty() const {
  for (int f : {kJobs, kNodes, kMeta}) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[f]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      // The store's own bookkeeping is not state.
      if (f == kMeta && (it->key() == kIndexedKey || it->key().starts_with("ha/"))) continue;
      return false;
    }
    if (!it->status().ok()) return FromRocks(it->status(), "store scan");
  }
  return true;
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

absl::Status Store::ScanMeta(
    std::string_view prefix,
    const std::function<absl::Status(std::string_view, std::string_view)>& fn) const {
  return ScanPrefix(handles_[kMeta], prefix, fn);
}

absl::Status Store::ScanPrefix(
    rocksdb::ColumnFamilyHandle* cf, std::string_view prefix,
    const std::function<absl::Status(std::string_view, std::string_view)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size()));
       it->Valid() && it->key().starts_with(rocksdb::Slice(prefix.data(), prefix.size()));
       it->Next()) {
    auto status = fn(std::string_view(it->key().data(), it->key().size()),
                     std::string_view(it->value().data(), it->value().size()));
    if (!status.ok()) return status;
  }
  return FromRocks(it->status(), "store scan");
}

absl::StatusOr<std::vector<v1::StoredToken>> Store::LoadTokens() const {
  std::vector<v1::StoredToken> tokens;
  absl::Status s = ScanMeta(kTokenPrefix, [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "token", k, &tokens);
  });
  if (!s.ok()) return s;
  return tokens;
}

absl::Status Store::LoadLive(const LoadOptions& options, size_t part_index, const std::string& from,
                             const std::string& to, StoreSnapshot* part) const {
  // One forward cursor per family, moved along the live ids in order: a restart with a
  // million pending jobs reads them in a few sequential scans, not a million seeks of new
  // iterators.
  Cursor jobs(db_->NewIterator(rocksdb::ReadOptions(), handles_[kJobs]));
  Cursor events(db_->NewIterator(rocksdb::ReadOptions(), handles_[kEvents]));
  Cursor secrets(db_->NewIterator(rocksdb::ReadOptions(), handles_[kMeta]));
  std::unique_ptr<rocksdb::Iterator> live(
      db_->NewIterator(rocksdb::ReadOptions(), handles_[kLive]));
  std::string rest, packed;  // a split record (sink)
  for (live->Seek(from); live->Valid() && (to.empty() || live->key().compare(to) < 0);
       live->Next()) {
    const std::string_view k(live->key().data(), live->key().size());
    if (!jobs.MoveTo(k) || jobs.key() != k) {
      return jobs.status().ok()
                 ? absl::DataLossError("store: live job '" + std::string(k) + "' has no record")
                 : FromRocks(jobs.status(), "store read job");
    }
    std::string_view record = jobs.value();
    if (options.sink) {
      if (!SplitJobRecord(record, &rest, &packed)) {
        return absl::DataLossError("store: job record '" + std::string(k) + "' does not parse");
      }
      record = rest;
    }
    auto job = ParseJob(record, k);
    if (!job.ok()) return job.status();
    EventList sunk_events;
    const std::string prefix = std::string(k) + "/";
    for (events.MoveTo(prefix); events.valid() && events.key().starts_with(prefix); events.Next()) {
      if (options.sink) {
        sunk_events.AppendRecord(events.value());
      } else if (absl::Status e = ParseInto(events.value(), "event", events.key(), &part->events);
                 !e.ok()) {
        return e;
      }
    }
    if (!events.status().ok()) return FromRocks(events.status(), "store read events");
    // Its exec secret, once it has been launched (a finished job's is deleted with it).
    const std::string secret = kSecretPrefix + std::string(k);
    if (secrets.MoveTo(secret) && secrets.key() == secret) {
      BATON_RETURN_IF_ERROR(ParseInto(secrets.value(), "exec secret", secret, &part->secrets));
    }
    if (!secrets.status().ok()) return FromRocks(secrets.status(), "store read exec secret");
    if (options.sink) {
      options.sink(part_index, std::move(*job), packed, std::move(sunk_events));
    } else {
      part->jobs.push_back(std::move(*job));
    }
  }
  return FromRocks(live->status(), "store scan live jobs");
}

absl::StatusOr<StoreSnapshot> Store::Load(const LoadOptions& options) const {
  // Unfinished jobs only, each with its events and exec secret: finished ones are read
  // when asked (ReadJob, ScanFinished), so start-up does not grow with history. A large
  // queue is read in id ranges on several threads (parsing and the new heap's page faults
  // are what a million jobs cost), then joined in id order.
  uint64_t live_jobs = 0;  // an estimate, to size the vectors and pick the ranges
  if (!db_->GetIntProperty(handles_[kLive], "rocksdb.estimate-num-keys", &live_jobs)) live_jobs = 0;
  live_jobs = std::min<uint64_t>(live_jobs, 100'000'000);
  std::vector<std::string> bounds = {""};  // each range's first key; "" also ends the last
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), handles_[kLive]));
    it->SeekToFirst();
    const uint64_t first = it->Valid() ? IdOfKey(it->key()) : 0;
    it->SeekToLast();
    const uint64_t last = it->Valid() ? IdOfKey(it->key()) : 0;
    const uint64_t per = std::max<uint64_t>(options.jobs_per_thread, 1);
    const uint64_t threads = std::clamp<uint64_t>(
        std::min<uint64_t>(std::thread::hardware_concurrency(), live_jobs / per), 1,
        kMaxLoadThreads);
    if (first > 0 && last > first) {
      for (uint64_t t = 1; t < threads; ++t) {
        bounds.push_back(PaddedKey(first + (last - first) / threads * t));
      }
    }
  }
  std::vector<StoreSnapshot> parts(bounds.size());
  std::vector<absl::Status> status(bounds.size());
  {
    std::vector<std::thread> workers;
    for (size_t i = 0; i < bounds.size(); ++i) {
      auto load = [&, i] {
        if (!options.sink) parts[i].jobs.reserve(live_jobs / bounds.size() + 1);
        status[i] =
            LoadLive(options, i, bounds[i], i + 1 < bounds.size() ? bounds[i + 1] : "", &parts[i]);
      };
      if (i + 1 < bounds.size()) {
        workers.emplace_back(load);
      } else {
        load();  // the last range on this thread
      }
    }
    for (auto& w : workers) w.join();
  }
  for (const absl::Status& st : status) {
    if (!st.ok()) return st;
  }
  StoreSnapshot snap = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    StoreSnapshot& p = parts[i];
    std::move(p.jobs.begin(), p.jobs.end(), std::back_inserter(snap.jobs));
    std::move(p.events.begin(), p.events.end(), std::back_inserter(snap.events));
    std::move(p.secrets.begin(), p.secrets.end(), std::back_inserter(snap.secrets));
    p = StoreSnapshot();  // freed as we go
  }
  absl::Status s = LoadFamily(handles_[kNodes], [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "node", k, &snap.nodes);
  });
  if (!s.ok()) return s;
  s = ScanMeta(kArrayPrefix, [&](std::string_view k, std::string_view v) {
    return ParseInto(v, "array", k, &snap.arrays);
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
  std::string usage;
  rocksdb::Status u = db_->Get(rocksdb::ReadOptions(), handles_[kMeta], kUsageKey, &usage);
  if (u.ok()) {
    v1::FairShareUsage parsed;
    if (!parsed.ParseFromString(usage)) {
      return absl::DataLossError("store: the fair-share ledger record does not parse");
    }
    snap.usage = std::move(parsed);
  } else if (!u.IsNotFound()) {
    return FromRocks(u, "store read fair_share_usage");
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
  std::unique_ptr<rocksdb::Iterator> last(db_->NewIterator(rocksdb::ReadOptions(), handles_[kLog]));
  last->SeekToLast();
  if (last->Valid()) {
    std::vector<v1::Event> newest;
    s = ParseInto(std::string_view(last->value().data(), last->value().size()), "log",
                  last->key().ToString(), &newest);
    if (!s.ok()) return s;
    snap.last_log_seq = newest[0].log_seq();
  }
  if (!last->status().ok()) return FromRocks(last->status(), "store read log");
  return snap;
}

namespace {

bool Wanted(const LogQuery& q, const v1::Event& ev) {
  return q.kinds == 0 || (q.kinds & (1u << static_cast<int>(ev.kind()))) != 0;
}

}  // namespace

// Scans the log (or the job's index) forward from after_seq + 1, or backward from the end.
absl::Status Store::ScanLog(const LogQuery& q, bool backward,
                            const std::function<bool(const v1::Event&)>& fn) const {
  rocksdb::ColumnFamilyHandle* cf = handles_[q.job_id ? kLogJob : kLog];
  std::string prefix = q.job_id ? PaddedKey(q.job_id) + "/" : "";
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf));
  if (backward) {
    it->SeekForPrev(q.job_id ? EventKey(q.job_id, UINT64_MAX) : PaddedKey(UINT64_MAX));
  } else {
    it->Seek(q.job_id ? EventKey(q.job_id, q.after_seq + 1) : PaddedKey(q.after_seq + 1));
  }
  for (; it->Valid(); backward ? it->Prev() : it->Next()) {
    if (!it->key().starts_with(prefix)) break;
    v1::Event ev;
    if (!ev.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("store: log record '" + it->key().ToString() + "' does not parse");
    }
    if (Wanted(q, ev) && !fn(ev)) break;
  }
  return FromRocks(it->status(), "store read log");
}

absl::StatusOr<std::vector<v1::Event>> Store::ReadLog(const LogQuery& q) const {
  std::vector<v1::Event> out;
  absl::Status s = ScanLog(q, /*backward=*/false, [&](const v1::Event& ev) {
    out.push_back(ev);
    return q.limit == 0 || out.size() < q.limit;
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<uint64_t> Store::TailStart(const LogQuery& q, size_t n) const {
  if (n == 0) return uint64_t{0};
  size_t seen = 0;
  uint64_t start = 0;
  absl::Status s = ScanLog(q, /*backward=*/true, [&](const v1::Event& ev) {
    start = ev.log_seq() - 1;
    return ++seen < n;
  });
  if (!s.ok()) return s;
  return seen < n ? 0 : start;
}

absl::StatusOr<v1::Job> Store::ReadJob(uint64_t id, bool with_events) const {
  std::string record;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), handles_[kJobs], PaddedKey(id), &record);
  if (g.IsNotFound()) return absl::NotFoundError("job " + std::to_string(id) + " not found");
  if (!g.ok()) return FromRocks(g, "store read job");
  BATON_ASSIGN_OR_RETURN(v1::Job job, ParseJob(record, PaddedKey(id)));
  if (!with_events) return job;
  std::vector<v1::Event> events;
  BATON_RETURN_IF_ERROR(ScanPrefix(
      handles_[kEvents], PaddedKey(id) + "/",
      [&](std::string_view k, std::string_view v) { return ParseInto(v, "event", k, &events); }));
  for (auto& ev : events) *job.add_events() = std::move(ev);
  return job;
}

absl::Status Store::ScanFinished(uint64_t after_id, const std::function<bool(v1::Job)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[kJobs]));
  for (it->Seek(PaddedKey(after_id + 1)); it->Valid(); it->Next()) {
    auto job =
        ParseJob(std::string_view(it->value().data(), it->value().size()), it->key().ToString());
    if (!job.ok()) return job.status();
    if (IsTerminal(job->state()) && !fn(std::move(*job))) break;
  }
  return FromRocks(it->status(), "store scan of finished jobs");
}

absl::StatusOr<std::vector<uint64_t>> Store::EndedBefore(int64_t cutoff_ms, size_t limit) const {
  std::vector<uint64_t> ids;
  if (cutoff_ms < 1) return ids;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[kEnded]));
  const std::string end = PaddedKey(static_cast<uint64_t>(cutoff_ms) + 1);
  // Jobs that ended at time 0 (never, by a real clock) are kept: their age is unknown.
  for (it->Seek(PaddedKey(1)); it->Valid() && ids.size() < limit; it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    if (key.compare(0, end.size(), end) >= 0) break;
    size_t slash = key.find('/');
    auto id = slash == std::string_view::npos
                  ? absl::StatusOr<uint64_t>(absl::DataLossError("no '/'"))
                  : ParseJobId(key.substr(slash + 1));
    if (!id.ok()) {
      return absl::DataLossError("store: index key '" + std::string(key) + "' is corrupt");
    }
    ids.push_back(*id);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "store scan of ended jobs");
  return ids;
}

absl::StatusOr<uint64_t> Store::CountFinished() const {
  uint64_t n = 0;
  BATON_RETURN_IF_ERROR(LoadFamily(handles_[kEnded], [&](std::string_view, std::string_view) {
    ++n;
    return absl::OkStatus();
  }));
  return n;
}

absl::Status Store::ScanUsage(int64_t first_day, int64_t last_day,
                              const std::function<void(int64_t day, const std::string& tenant,
                                                       const v1::UsageRecord& rec)>& fn,
                              const std::function<bool(std::string_view tenant)>& wants) const {
  if (last_day < first_day || last_day < 0) return absl::OkStatus();
  rocksdb::ReadOptions ro;
  const std::string end = PaddedKey(static_cast<uint64_t>(last_day) + 1);
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, handles_[kUsage]));
  v1::UsageRecord rec;
  for (it->Seek(PaddedKey(static_cast<uint64_t>(std::max<int64_t>(first_day, 0)))); it->Valid();
       it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    const size_t slash = key.find('/');
    if (wants && slash != std::string_view::npos && !wants(key.substr(slash + 1))) continue;
    int64_t day = 0;
    if (slash == std::string_view::npos ||
        std::from_chars(key.data(), key.data() + slash, day).ptr != key.data() + slash ||
        !rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()))) {
      return absl::DataLossError("store: usage record '" + std::string(key) + "' is corrupt");
    }
    fn(day, std::string(key.substr(slash + 1)), rec);
  }
  return FromRocks(it->status(), "store scan of the usage rollup");
}

absl::Status Store::ScanEnded(
    const EndedQuery& q, const std::function<bool(const std::string& key, v1::Job job)>& fn) const {
  rocksdb::ReadOptions ro;
  const std::string lower = PaddedKey(static_cast<uint64_t>(std::max<int64_t>(q.since_ms, 0)));
  rocksdb::Slice lower_slice(lower);
  ro.iterate_lower_bound = &lower_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, handles_[kEnded]));
  // Newest first: from just below `before_key` (a page's last key), else from until_ms.
  if (!q.before_key.empty()) {
    it->SeekForPrev(q.before_key);
    if (it->Valid() && it->key() == rocksdb::Slice(q.before_key)) it->Prev();
  } else {
    it->SeekForPrev(PaddedKey(static_cast<uint64_t>(std::max<int64_t>(q.until_ms, 0))));
  }
  v1::EndedEntry entry;
  for (; it->Valid(); it->Prev()) {
    std::string_view key(it->key().data(), it->key().size());
    const size_t slash = key.find('/');
    if (slash == std::string_view::npos) {
      return absl::DataLossError("store: index key '" + std::string(key) + "' is corrupt");
    }
    // The filter from the index entry, when it has one; the record decides either way.
    if (it->value().size() > 0 &&
        entry.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) &&
        !q.Matches(entry.user(), entry.tenant(), entry.state())) {
      continue;
    }
    auto id = ParseJobId(key.substr(slash + 1));
    if (!id.ok())
      return absl::DataLossError("store: index key '" + std::string(key) + "' is corrupt");
    auto job = ReadJob(*id, /*with_events=*/false);
    if (job.status().code() == absl::StatusCode::kNotFound) continue;  // deleted meanwhile
    if (!job.ok()) return job.status();
    if (!q.Matches(job->user(), job->spec().tenant(), job->state())) continue;
    if (!fn(std::string(key), std::move(*job))) break;
  }
  return FromRocks(it->status(), "store scan of ended jobs");
}

}  // namespace baton
