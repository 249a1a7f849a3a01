#include "examples/train_mlp/slow_env.h"

#include <chrono>
#include <thread>

namespace baton::examples {
namespace {

class SlowSyncFile : public checkpoint::WritableFile {
 public:
  SlowSyncFile(std::unique_ptr<checkpoint::WritableFile> base, int64_t delay_ms)
      : base_(std::move(base)), delay_ms_(delay_ms) {}
  absl::Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    return base_->WriteAt(offset, data, n);
  }
  absl::Status Sync() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    return base_->Sync();
  }
  absl::Status Close() override { return base_->Close(); }
  bool direct() const override { return base_->direct(); }

 private:
  std::unique_ptr<checkpoint::WritableFile> base_;
  const int64_t delay_ms_;
};

bool IsShard(const std::string& path) {
  const std::string suffix = ".shard";
  return path.size() >= suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<checkpoint::WritableFile>> SlowSyncEnv::NewWritableFile(
    const std::string& path, const checkpoint::WritableFileOptions& options) {
  auto file = target()->NewWritableFile(path, options);
  if (!file.ok() || !IsShard(path) || delay_ms_ <= 0) return file;
  return std::unique_ptr<checkpoint::WritableFile>(
      std::make_unique<SlowSyncFile>(std::move(*file), delay_ms_));
}

}  // namespace baton::examples
