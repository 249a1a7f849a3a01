#include "coordinator/backup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/backup_dir.h"
#include "common/clock.h"
#include "common/version.h"
#include "proto/rpc_util.h"
#include "proto/threaded_writer.h"
#include "spdlog/spdlog.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

constexpr size_t kChunkBytes = 1 << 20;
std::atomic<bool> backup_running{false};

absl::Status FsyncPath(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError("open " + path + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return absl::UnavailableError("fsync " + path + ": " + std::strerror(errno));
  return absl::OkStatus();
}

// Takes the checkpoint on a thread of its own (a flush and fsyncs: never on gRPC's
// callback threads, which also run handshakes), then streams its files and the
// manifest. File reads (1 MiB) run on the callback threads, one chunk per completed
// write. The checkpoint directory is removed when the call ends, however it ends.
class BackupStream final : public grpc::ServerWriteReactor<v1::BackupChunk> {
 public:
  explicit BackupStream(Store* store) {
    manifest_.set_created_ms(RealClock::Get()->NowMs());
    manifest_.set_coordinator_version(Version());
    std::thread([this, store] { Prepare(store); }).detach();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "backup: client went away"));
    if (sent_manifest_) return Finish(grpc::Status::OK);
    Next();
  }

  void OnDone() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
    if (fd_ >= 0) ::close(fd_);
    backup_running = false;
    spdlog::info("backup: {} of {} files sent ({} bytes)", sent_manifest_ ? "all" : "not all",
                 files_.size(), bytes_);
    delete this;
  }

 private:
  // Beside the data dir, on its filesystem (SST files are hard-linked), in a directory
  // the service unit may write (StateDirectory). Its last act is StartWrite or Finish.
  void Prepare(Store* store) {
    const std::string parent = store->path() + ".backup";
    std::error_code ec;
    fs::create_directories(parent, ec);
    // Anything there is stale (one process owns the store; one backup at a time): a
    // backup cut short by a crash.
    for (const auto& entry : fs::directory_iterator(parent, ec)) fs::remove_all(entry.path(), ec);
    dir_ = parent + "/" + std::to_string(::getpid());
    absl::Status s = store->Checkpoint(dir_);
    if (s.ok()) {
      for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        if (entry.is_regular_file()) files_.push_back(entry.path().filename().string());
      }
      std::sort(files_.begin(), files_.end());
      if (ec) s = absl::UnavailableError("backup: list " + dir_ + ": " + ec.message());
    }
    if (!s.ok()) {
      spdlog::error("backup failed: {}", s.ToString());
      return Finish(ToGrpc(s));
    }
    spdlog::info("backup: checkpoint of {} files taken in {}", files_.size(), dir_);
    Next();
  }

  void Next() {
    while (index_ < files_.size()) {
      const std::string& name = files_[index_];
      if (fd_ < 0) {
        fd_ = ::open((dir_ + "/" + name).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd_ < 0) return Fail("open " + name);
        hash_ = std::make_unique<Sha256>();
        offset_ = 0;
      }
      chunk_.Clear();
      std::string* data = chunk_.mutable_data();
      data->resize(kChunkBytes);
      ssize_t r;
      do r = ::read(fd_, data->data(), data->size());
      while (r < 0 && errno == EINTR);
      if (r < 0) return Fail("read " + name);
      if (r == 0 && offset_ > 0) {  // end of a non-empty file: next one
        CloseFile(name);
        continue;
      }
      data->resize(static_cast<size_t>(r));
      chunk_.set_file(name);
      chunk_.set_offset(offset_);
      hash_->Update(data->data(), data->size());
      offset_ += static_cast<uint64_t>(r);
      bytes_ += static_cast<uint64_t>(r);
      if (r == 0) CloseFile(name);  // an empty file: one empty chunk names it
      return StartWrite(&chunk_);
    }
    chunk_.Clear();
    *chunk_.mutable_manifest() = manifest_;
    sent_manifest_ = true;
    StartWrite(&chunk_);
  }

  void CloseFile(const std::string& name) {
    ::close(fd_);
    fd_ = -1;
    auto* f = manifest_.add_files();
    f->set_name(name);
    f->set_size(offset_);
    f->set_sha256(hash_->HexDigest());
    ++index_;
  }

  void Fail(const std::string& what) {
    std::string msg = "backup: " + what + ": " + std::strerror(errno);
    spdlog::error("{}", msg);
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, msg));
  }

  std::string dir_;
  std::vector<std::string> files_;
  size_t index_ = 0;
  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t bytes_ = 0;
  std::unique_ptr<Sha256> hash_;
  v1::BackupChunk chunk_;
  v1::BackupManifest manifest_;
  bool sent_manifest_ = false;
};

}  // namespace

grpc::ServerWriteReactor<v1::BackupChunk>* NewBackupStream(Store* store) {
  if (backup_running.exchange(true)) {
    return FinishedStream<v1::BackupChunk>(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED, "backup: another backup is running; retry later"));
  }
  return new BackupStream(store);
}

absl::StatusOr<RestoreSummary> RestoreStore(const std::string& backup_dir,
                                            const std::string& data_dir) {
  std::error_code ec;
  if (fs::exists(data_dir, ec) && !(fs::is_directory(data_dir, ec) && fs::is_empty(data_dir, ec))) {
    return absl::FailedPreconditionError(
        "restore: " + data_dir +
        " is not empty: stop the coordinator and move its data dir away first (a restore "
        "never overwrites data)");
  }
  auto manifest = VerifyBackupDir(backup_dir);
  if (!manifest.ok()) return manifest.status();
  RestoreSummary summary;
  summary.manifest = *manifest;
  const std::string tmp = data_dir + ".restore-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return absl::UnavailableError("restore: create " + tmp + ": " + ec.message());
  auto fail = [&](absl::Status s) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    return s;
  };
  for (const auto& f : manifest->files()) {
    fs::copy_file(backup_dir + "/" + f.name(), tmp + "/" + f.name(), ec);
    if (ec) {
      return fail(absl::UnavailableError("restore: copy " + f.name() + ": " + ec.message()));
    }
    if (absl::Status s = FsyncPath(tmp + "/" + f.name(), O_RDONLY); !s.ok()) return fail(s);
    summary.bytes += f.size();
  }
  {
    // Opened and loaded as the coordinator will: a copy that does not load is not kept.
    auto store = Store::Open(tmp, {});
    if (!store.ok()) return fail(store.status());
    auto snap = (*store)->Load();
    if (!snap.ok()) return fail(snap.status());
    auto finished = (*store)->CountFinished();
    if (!finished.ok()) return fail(finished.status());
    summary.unfinished = snap->jobs.size();  // Load reads only the unfinished jobs
    summary.jobs = snap->jobs.size() + *finished;
    summary.next_job_id = snap->next_job_id;
  }
  // The coordinator runs as the owner of the data dir's parent (/var/lib/baton): a
  // restore run as root hands the copy to it.
  const fs::path parent = fs::absolute(data_dir).parent_path();
  struct stat st {};
  if (::geteuid() == 0 && ::stat(parent.c_str(), &st) == 0 && st.st_uid != 0) {
    for (const auto& entry : fs::recursive_directory_iterator(tmp, ec)) {
      if (::lchown(entry.path().c_str(), st.st_uid, st.st_gid) != 0) ec.clear();
    }
    if (::chown(tmp.c_str(), st.st_uid, st.st_gid) != 0) ec.clear();
    ::chmod(tmp.c_str(), 0700);
  }
  if (fs::exists(data_dir, ec)) fs::remove(data_dir, ec);  // empty, checked above
  fs::rename(tmp, data_dir, ec);
  if (ec) return fail(absl::UnavailableError("restore: rename " + tmp + ": " + ec.message()));
  if (absl::Status s = FsyncPath(parent.string(), O_RDONLY | O_DIRECTORY); !s.ok()) return s;
  return summary;
}

}  // namespace baton
