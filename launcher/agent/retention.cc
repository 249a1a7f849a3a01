#include "launcher/agent/retention.h"

#include <filesystem>

#include "launcher/agent/job_files.h"
#include "spdlog/spdlog.h"

namespace baton {

AttemptDirJanitor::AttemptDirJanitor(std::string data_dir, absl::Duration retention,
                                     Tracked tracked, absl::Duration period)
    : data_dir_(std::move(data_dir)),
      retention_(retention),
      tracked_(std::move(tracked)),
      period_(period) {}

AttemptDirJanitor::~AttemptDirJanitor() { Stop(); }

void AttemptDirJanitor::Start() {
  if (retention_ <= absl::ZeroDuration() || thread_.joinable()) return;
  thread_ = std::thread([this] {
    for (;;) {
      Sweep();
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, absl::ToChronoMilliseconds(period_), [this] { return stop_; })) {
        return;
      }
    }
  });
}

void AttemptDirJanitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> AttemptDirJanitor::Sweep() {
  std::vector<std::string> removed;
  // Real time: the directories' times are the file system's.
  for (const std::string& dir :
       ExpiredAttemptDirs(data_dir_, tracked_(), absl::Now(), retention_)) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) {
      spdlog::warn("retention: cannot remove {}: {}", dir, ec.message());
      continue;
    }
    spdlog::info("retention: removed {}", dir);
    removed.push_back(dir);
    std::filesystem::remove(std::filesystem::path(dir).parent_path(), ec);  // when empty
  }
  return removed;
}

}  // namespace baton
