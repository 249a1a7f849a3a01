#include "tests/checkpoint/fault_env.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace baton::checkpoint::testing {
namespace {

constexpr int kRoot = 0;

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos < path.size()) {
    const size_t slash = path.find('/', pos);
    const size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > pos) parts.push_back(path.substr(pos, end - pos));
    pos = end + 1;
  }
  return parts;
}

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, int ino) : env_(env), ino_(ino) {}
  absl::Status WriteAt(uint64_t offset, const void* data, size_t n) override {
    return env_->WriteAt(ino_, offset, data, n);
  }
  absl::Status Sync() override { return env_->SyncFile(ino_); }
  absl::Status Close() override { return absl::OkStatus(); }
  bool direct() const override { return false; }

 private:
  FaultInjectionEnv* const env_;
  const int ino_;
};

class FaultReadableFile final : public ReadableFile {
 public:
  FaultReadableFile(FaultInjectionEnv* env, int ino, bool direct)
      : env_(env), ino_(ino), direct_(direct) {}
  absl::Status ReadAt(uint64_t offset, void* data, size_t n) override {
    // O_DIRECT's contract, enforced as the kernel does (EINVAL).
    if (direct_ && (offset % kDirectIoAlignment != 0 || n % kDirectIoAlignment != 0 ||
                    reinterpret_cast<uintptr_t>(data) % kDirectIoAlignment != 0)) {
      return absl::InvalidArgumentError("unaligned O_DIRECT read of " + std::to_string(n) +
                                        " bytes at " + std::to_string(offset));
    }
    return env_->ReadAt(ino_, offset, data, n);
  }
  absl::StatusOr<uint64_t> Size() override { return env_->SizeOf(ino_); }
  bool direct() const override { return direct_; }

 private:
  FaultInjectionEnv* const env_;
  const int ino_;
  const bool direct_;
};

}  // namespace

FaultInjectionEnv::FaultInjectionEnv() { inodes_[kRoot].dir = true; }

absl::Status FaultInjectionEnv::MutateLocked() {
  if (crashed_) return absl::UnavailableError("simulated power loss: the machine is down");
  if (ops_ == crash_at_) {
    crashed_ = true;
    return absl::UnavailableError("simulated power loss at mutating call " + std::to_string(ops_));
  }
  ++ops_;
  return absl::OkStatus();
}

absl::StatusOr<int> FaultInjectionEnv::WalkLocked(const std::vector<std::string>& parts,
                                                  size_t count, const std::string& path) const {
  int ino = kRoot;
  for (size_t i = 0; i < count; ++i) {
    const Inode& dir = inodes_.at(ino);
    auto it = dir.entries.find(parts[i]);
    if (!dir.dir || it == dir.entries.end()) return absl::NotFoundError(path + ": not found");
    ino = it->second;
  }
  return ino;
}

absl::StatusOr<int> FaultInjectionEnv::LookupLocked(const std::string& path) const {
  const std::vector<std::string> parts = Components(path);
  return WalkLocked(parts, parts.size(), path);
}

absl::StatusOr<std::pair<int, std::string>> FaultInjectionEnv::ParentLocked(
    const std::string& path) const {
  const std::vector<std::string> parts = Components(path);
  if (parts.empty()) return absl::InvalidArgumentError("the root has no parent");
  BATON_ASSIGN_OR_RETURN(int parent, WalkLocked(parts, parts.size() - 1, path));
  if (!inodes_.at(parent).dir) return absl::NotFoundError(path + ": parent is not a directory");
  return std::make_pair(parent, parts.back());
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path, const WritableFileOptions&) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(auto parent, ParentLocked(path));
  auto& entries = inodes_[parent.first].entries;
  auto it = entries.find(parent.second);
  int ino;
  if (it != entries.end()) {
    ino = it->second;
    if (inodes_[ino].dir) return absl::FailedPreconditionError(path + " is a directory");
    inodes_[ino].data.clear();
  } else {
    ino = next_ino_++;
    inodes_[ino] = Inode{};
    entries[parent.second] = ino;
  }
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, ino));
}

absl::StatusOr<std::unique_ptr<ReadableFile>> FaultInjectionEnv::NewReadableFile(
    const std::string& path, const ReadableFileOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(path));
  if (inodes_[ino].dir) return absl::FailedPreconditionError(path + " is a directory");
  return std::unique_ptr<ReadableFile>(new FaultReadableFile(this, ino, options.direct_io));
}

absl::StatusOr<uint64_t> FaultInjectionEnv::FileSize(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(path));
  return inodes_[ino].data.size();
}

absl::StatusOr<bool> FaultInjectionEnv::FileExists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return LookupLocked(path).ok();
}

absl::StatusOr<std::vector<std::string>> FaultInjectionEnv::ListDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(dir));
  if (!inodes_[ino].dir) return absl::NotFoundError(dir + " is not a directory");
  std::vector<std::string> names;
  for (const auto& [name, child] : inodes_[ino].entries) names.push_back(name);
  return names;
}

absl::Status FaultInjectionEnv::CreateDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(auto parent, ParentLocked(dir));
  auto& entries = inodes_[parent.first].entries;
  if (entries.count(parent.second)) return absl::OkStatus();
  const int ino = next_ino_++;
  inodes_[ino].dir = true;
  entries[parent.second] = ino;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(auto parent, ParentLocked(path));
  auto& entries = inodes_[parent.first].entries;
  auto it = entries.find(parent.second);
  if (it == entries.end()) return absl::NotFoundError(path + ": not found");
  if (inodes_[it->second].dir) return absl::FailedPreconditionError(path + " is a directory");
  entries.erase(it);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::RemoveDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(auto parent, ParentLocked(dir));
  auto& entries = inodes_[parent.first].entries;
  auto it = entries.find(parent.second);
  if (it == entries.end()) return absl::NotFoundError(dir + ": not found");
  if (!inodes_[it->second].entries.empty()) {
    return absl::FailedPreconditionError(dir + " is not empty");
  }
  entries.erase(it);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(auto src, ParentLocked(from));
  BATON_ASSIGN_OR_RETURN(auto dst, ParentLocked(to));
  auto& src_entries = inodes_[src.first].entries;
  auto it = src_entries.find(src.second);
  if (it == src_entries.end()) return absl::NotFoundError(from + ": not found");
  const int ino = it->second;
  src_entries.erase(it);
  inodes_[dst.first].entries[dst.second] = ino;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(dir));
  inodes_[ino].synced_entries = inodes_[ino].entries;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::WriteAt(int ino, uint64_t offset, const void* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return absl::NotFoundError("file is gone");
  std::string& bytes = it->second.data;
  if (bytes.size() < offset + n) bytes.resize(offset + n, '\0');
  std::memcpy(bytes.data() + offset, data, n);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncFile(int ino) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_RETURN_IF_ERROR(MutateLocked());
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return absl::NotFoundError("file is gone");
  it->second.synced_data = it->second.data;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::ReadAt(int ino, uint64_t offset, void* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return absl::NotFoundError("file is gone");
  const std::string& bytes = it->second.data;
  if (offset > bytes.size() || n > bytes.size() - offset) {
    return absl::DataLossError("file is truncated: nothing at offset " + std::to_string(offset));
  }
  std::memcpy(data, bytes.data() + offset, n);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> FaultInjectionEnv::SizeOf(int ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return absl::NotFoundError("file is gone");
  return it->second.data.size();
}

void FaultInjectionEnv::CrashAfterOps(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_at_ = n;
}

int64_t FaultInjectionEnv::mutating_ops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

void FaultInjectionEnv::KeepSomeUnsynced(Inode& node, uint64_t& rng) {
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  std::set<std::string> names;
  for (const auto& [name, ino] : node.entries) names.insert(name);
  for (const auto& [name, ino] : node.synced_entries) names.insert(name);
  for (const std::string& name : names) {
    if (next() % 2 == 0) continue;  // this change got written back
    auto synced = node.synced_entries.find(name);
    if (synced == node.synced_entries.end()) {
      node.entries.erase(name);
    } else {
      node.entries[name] = synced->second;
    }
  }
  if (node.data == node.synced_data) return;
  const uint64_t keep = next() % (node.data.size() + 1);
  std::string mixed = node.data.substr(0, keep);
  if (node.synced_data.size() > keep) mixed += node.synced_data.substr(keep);
  node.data = std::move(mixed);
}

void FaultInjectionEnv::PowerLoss(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull | 1;
  for (auto& [ino, node] : inodes_) {
    if (seed != 0) {
      KeepSomeUnsynced(node, rng);
    } else {
      node.data = node.synced_data;
      node.entries = node.synced_entries;
    }
    node.synced_data = node.data;
    node.synced_entries = node.entries;
  }
  CollectGarbageLocked();
  crashed_ = false;
  crash_at_ = -1;
}

void FaultInjectionEnv::CollectGarbageLocked() {
  std::set<int> reachable;
  std::vector<int> todo = {kRoot};
  while (!todo.empty()) {
    const int ino = todo.back();
    todo.pop_back();
    if (!reachable.insert(ino).second) continue;
    for (const auto& [name, child] : inodes_[ino].entries) todo.push_back(child);
  }
  for (auto it = inodes_.begin(); it != inodes_.end();) {
    it = reachable.count(it->first) ? std::next(it) : inodes_.erase(it);
  }
}

absl::Status FaultInjectionEnv::OverwriteByte(const std::string& path, uint64_t offset,
                                              char value) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(path));
  Inode& node = inodes_[ino];
  if (offset >= node.data.size()) return absl::OutOfRangeError("offset past the end");
  node.data[offset] = value;
  node.synced_data = node.data;
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::Truncate(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  BATON_ASSIGN_OR_RETURN(int ino, LookupLocked(path));
  Inode& node = inodes_[ino];
  node.data.resize(size);
  node.synced_data = node.data;
  return absl::OkStatus();
}

}  // namespace baton::checkpoint::testing
