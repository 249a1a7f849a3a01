#include "checkpoint/env.h"

#include <deque>
#include <memory>
#include <string>

#include "common/status.h"

namespace baton::checkpoint {
namespace {

absl::Status WriteWhole(Env* env, const std::string& path, const std::string& contents, bool sync) {
  BATON_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(path, WritableFileOptions{}));
  if (!contents.empty()) BATON_RETURN_IF_ERROR(file->WriteAt(0, contents.data(), contents.size()));
  if (sync) BATON_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

absl::Status Replace(Env* env, const std::string& path, const std::string& contents, bool sync) {
  const std::string tmp = path + ".tmp";
  absl::Status status = WriteWhole(env, tmp, contents, sync);
  if (status.ok()) status = env->Rename(tmp, path);
  if (!status.ok()) {
    env->RemoveFile(tmp).IgnoreError();  // best effort: the error below is what matters
    return status;
  }
  return sync ? env->SyncDir(DirName(path)) : absl::OkStatus();
}

// ReadableFile's default queue: every read done at once, results handed out in order.
class InlineReadQueue final : public ReadQueue {
 public:
  explicit InlineReadQueue(ReadableFile* file) : file_(file) {}
  absl::Status Submit(uint64_t offset, void* data, size_t n, uint64_t tag) override {
    done_.push_back({tag, file_->ReadAt(offset, data, n)});
    return absl::OkStatus();
  }
  Done Next() override {
    if (done_.empty()) return {0, absl::InternalError("ReadQueue::Next with no read submitted")};
    Done d = std::move(done_.front());
    done_.pop_front();
    return d;
  }

 private:
  ReadableFile* const file_;
  std::deque<Done> done_;
};

}  // namespace

std::unique_ptr<ReadQueue> ReadableFile::NewReadQueue(int /*depth*/) {
  return std::make_unique<InlineReadQueue>(this);
}

absl::Status WriteFileAtomically(Env* env, const std::string& path, const std::string& contents) {
  return Replace(env, path, contents, /*sync=*/true);
}

absl::Status ReplaceFileContents(Env* env, const std::string& path, const std::string& contents) {
  return Replace(env, path, contents, /*sync=*/false);
}

absl::StatusOr<std::string> ReadSmallFile(Env* env, const std::string& path, size_t max_bytes) {
  BATON_ASSIGN_OR_RETURN(auto file, env->NewReadableFile(path, {}));
  BATON_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size > max_bytes) {
    return absl::InvalidArgumentError(path + " has " + std::to_string(size) + " bytes; at most " +
                                      std::to_string(max_bytes) + " are expected");
  }
  std::string contents(size, '\0');
  if (size > 0) BATON_RETURN_IF_ERROR(file->ReadAt(0, contents.data(), size));
  return contents;
}

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace baton::checkpoint
