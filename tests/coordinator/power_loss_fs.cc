#include "tests/coordinator/power_loss_fs.h"

#include <unistd.h>

namespace baton::testing {
namespace {

using rocksdb::IOStatus;

class TrackedFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackedFile(std::unique_ptr<rocksdb::FSWritableFile> base, PowerLossFs* fs, std::string name)
      : FSWritableFileOwnerWrapper(std::move(base)), fs_(fs), name_(std::move(name)) {}

  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                  rocksdb::IODebugContext* dbg) override {
    if (fs_->crashed()) return IOStatus::IOError("power lost");
    IOStatus s = target()->Append(data, o, dbg);
    if (s.ok()) fs_->Appended(name_, data.size());
    return s;
  }
  IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                  const rocksdb::DataVerificationInfo& info,
                  rocksdb::IODebugContext* dbg) override {
    if (fs_->crashed()) return IOStatus::IOError("power lost");
    IOStatus s = target()->Append(data, o, info, dbg);
    if (s.ok()) fs_->Appended(name_, data.size());
    return s;
  }
  IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return SyncWith([&] { return target()->Sync(o, dbg); });
  }
  IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return SyncWith([&] { return target()->Fsync(o, dbg); });
  }
  IOStatus RangeSync(uint64_t, uint64_t, const rocksdb::IOOptions&,
                     rocksdb::IODebugContext*) override {
    return IOStatus::OK();  // a partial sync promises nothing here: treat it as none
  }

 private:
  template <typename F>
  IOStatus SyncWith(F sync) {
    if (fs_->crashed()) return IOStatus::IOError("power lost");
    IOStatus s = sync();
    if (s.ok()) fs_->Synced(name_);
    return s;
  }

  PowerLossFs* fs_;
  std::string name_;
};

}  // namespace

IOStatus PowerLossFs::NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) {
  if (crashed()) return IOStatus::IOError("power lost");
  std::unique_ptr<rocksdb::FSWritableFile> base;
  IOStatus s = target()->NewWritableFile(fname, opts, &base, dbg);
  if (!s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    files_[fname] = FileState{};
  }
  *result = std::make_unique<TrackedFile>(std::move(base), this, fname);
  return s;
}

IOStatus PowerLossFs::ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                         std::unique_ptr<rocksdb::FSWritableFile>* result,
                                         rocksdb::IODebugContext* dbg) {
  if (crashed()) return IOStatus::IOError("power lost");
  std::unique_ptr<rocksdb::FSWritableFile> base;
  IOStatus s = target()->ReopenWritableFile(fname, opts, &base, dbg);
  if (!s.ok()) return s;
  uint64_t size = 0;
  target()->GetFileSize(fname, rocksdb::IOOptions(), &size, dbg);
  {
    std::lock_guard<std::mutex> lock(mu_);
    files_[fname] = FileState{size, size};  // what existed before counts as durable
  }
  *result = std::make_unique<TrackedFile>(std::move(base), this, fname);
  return s;
}

IOStatus PowerLossFs::RenameFile(const std::string& src, const std::string& dst,
                                 const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg) {
  if (crashed()) return IOStatus::IOError("power lost");
  IOStatus s = target()->RenameFile(src, dst, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(src);
    if (it != files_.end()) {
      files_[dst] = it->second;
      files_.erase(src);
    }
  }
  return s;
}

IOStatus PowerLossFs::DeleteFile(const std::string& fname, const rocksdb::IOOptions& opts,
                                 rocksdb::IODebugContext* dbg) {
  if (crashed()) return IOStatus::IOError("power lost");
  IOStatus s = target()->DeleteFile(fname, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    files_.erase(fname);
  }
  return s;
}

void PowerLossFs::Crash() {
  std::lock_guard<std::mutex> lock(mu_);
  crashed_ = true;
}

bool PowerLossFs::crashed() {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

void PowerLossFs::Appended(const std::string& fname, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  files_[fname].size += bytes;
}

void PowerLossFs::Synced(const std::string& fname) {
  std::lock_guard<std::mutex> lock(mu_);
  FileState& f = files_[fname];
  f.synced = f.size;
}

uint64_t PowerLossFs::DropUnsyncedData() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t lost = 0;
  for (const auto& [name, f] : files_) {
    if (f.size > f.synced) {
      lost += f.size - f.synced;
      (void)!truncate(name.c_str(), static_cast<off_t>(f.synced));
    }
  }
  return lost;
}

}  // namespace baton::testing
