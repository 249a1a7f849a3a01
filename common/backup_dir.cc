#include "common/backup_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/daemon.h"

namespace baton {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(what + ": " + std::strerror(errno));
}

absl::Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno("write " + path);
    data += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("fsync " + dir);
}

// Size and SHA-256 of a regular file (not followed through a link).
absl::StatusOr<std::pair<uint64_t, std::string>> HashFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  Sha256 hash;
  uint64_t size = 0;
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      absl::Status s = Errno("read " + path);
      ::close(fd);
      return s;
    }
    if (r == 0) break;
    hash.Update(buf.data(), static_cast<size_t>(r));
    size += static_cast<uint64_t>(r);
  }
  ::close(fd);
  return std::make_pair(size, hash.HexDigest());
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::Update(const void* data, size_t n) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n);
}
std::string Sha256::HexDigest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out, &len);
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += kDigits[out[i] >> 4];
    hex += kDigits[out[i] & 15];
  }
  return hex;
}

absl::Status CheckBackupFileName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
            name != kBackupManifestName;
  for (char c : name) ok = ok && c > 0x20 && c < 0x7f && c != '/' && c != '\\';
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError("backup: '" + name.substr(0, 64) +
                                    "' is not a plain file name a backup may hold");
}

absl::StatusOr<BackupWriter> BackupWriter::Start(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) return absl::InvalidArgumentError("backup: no directory given");
  if (std::filesystem::exists(std::filesystem::symlink_status(dir, ec))) {
    return absl::FailedPreconditionError(
        "backup: " + dir + " already exists; give a new directory (nothing is overwritten)");
  }
  BackupWriter w;
  w.dir_ = dir;
  w.partial_ = dir + ".partial-" + std::to_string(::getpid());
  std::filesystem::remove_all(w.partial_, ec);
  if (::mkdir(w.partial_.c_str(), 0700) != 0) return Errno("mkdir " + w.partial_);
  return w;
}

BackupWriter::BackupWriter(BackupWriter&& o) noexcept
    : dir_(std::move(o.dir_)),
      partial_(std::move(o.partial_)),
      fd_(std::exchange(o.fd_, -1)),
      file_(std::move(o.file_)),
      offset_(o.offset_),
      bytes_(o.bytes_),
      hash_(std::move(o.hash_)),
      done_(std::move(o.done_)),
      finished_(std::exchange(o.finished_, true)) {}

BackupWriter::~BackupWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_ && !partial_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(partial_, ec);
  }
}

absl::Status BackupWriter::CloseCurrent() {
  if (fd_ < 0) return absl::OkStatus();
  const std::string path = partial_ + "/" + file_;
  int rc = ::fsync(fd_);
  ::close(fd_);
  fd_ = -1;
  if (rc != 0) return Errno("fsync " + path);
  done_[file_] = {offset_, hash_->HexDigest()};
  hash_.reset();
  return absl::OkStatus();
}

absl::Status BackupWriter::Add(const v1::BackupChunk& chunk) {
  if (chunk.file() != file_ || fd_ < 0) {
    if (absl::Status s = CheckBackupFileName(chunk.file()); !s.ok()) return s;
    if (done_.count(chunk.file()) || chunk.file() == file_) {
      return absl::DataLossError("backup: file " + chunk.file() + " sent twice");
    }
    if (absl::Status s = CloseCurrent(); !s.ok()) return s;
    file_ = chunk.file();
    offset_ = 0;
    const std::string path = partial_ + "/" + file_;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) return Errno("create " + path);
    hash_ = std::make_unique<Sha256>();
  }
  if (chunk.offset() != offset_) {
    return absl::DataLossError("backup: file " + file_ + ": chunk at offset " +
                               std::to_string(chunk.offset()) + ", expected " +
                               std::to_string(offset_));
  }
  const std::string& data = chunk.data();
  if (absl::Status s = WriteAll(fd_, data.data(), data.size(), partial_ + "/" + file_); !s.ok()) {
    return s;
  }
  hash_->Update(data.data(), data.size());
  offset_ += data.size();
  bytes_ += data.size();
  return absl::OkStatus();
}

absl::Status BackupWriter::Finish(const v1::BackupManifest& manifest) {
  if (absl::Status s = CloseCurrent(); !s.ok()) return s;
  if (manifest.files_size() == 0) return absl::DataLossError("backup: the manifest lists no file");
  std::set<std::string> listed;
  for (const auto& f : manifest.files()) {
    if (absl::Status s = CheckBackupFileName(f.name()); !s.ok()) return s;
    listed.insert(f.name());
    auto got = done_.find(f.name());
    if (got == done_.end()) {
      return absl::DataLossError("backup: file " + f.name() +
                                 " is in the manifest but was not sent");
    }
    if (got->second.first != f.size() || got->second.second != f.sha256()) {
      return absl::DataLossError("backup: file " + f.name() + " arrived with " +
                                 std::to_string(got->second.first) +
                                 " bytes and another checksum than the manifest's (" +
                                 std::to_string(f.size()) + " bytes)");
    }
  }
  for (const auto& [name, unused] : done_) {
    if (!listed.count(name)) {
      return absl::DataLossError("backup: file " + name + " was sent but is not in the manifest");
    }
  }
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(manifest, &json, opts).ok()) {
    return absl::InternalError("backup: cannot render the manifest");
  }
  if (absl::Status s = WriteFileAtomically(partial_ + "/" + kBackupManifestName, json, 0600);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = SyncDir(partial_); !s.ok()) return s;
  if (::rename(partial_.c_str(), dir_.c_str()) != 0) {
    return Errno("rename " + partial_ + " to " + dir_);
  }
  finished_ = true;
  std::string parent = std::filesystem::path(dir_).parent_path().string();
  return SyncDir(parent.empty() ? "." : parent);
}

absl::StatusOr<v1::BackupManifest> VerifyBackupDir(const std::string& dir) {
  const std::string path = dir + "/" + kBackupManifestName;
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError("restore: " + path +
                               " is missing: not a backup written by `baton admin backup`");
  }
  std::string text((std::istreambuf_iterator<char>(in)), {});
  v1::BackupManifest manifest;
  if (!google::protobuf::util::JsonStringToMessage(text, &manifest).ok() ||
      manifest.files_size() == 0) {
    return absl::DataLossError("restore: " + path + " is not a backup manifest");
  }
  std::set<std::string> listed;
  for (const auto& f : manifest.files()) {
    if (absl::Status s = CheckBackupFileName(f.name()); !s.ok()) return s;
    listed.insert(f.name());
    auto got = HashFile(dir + "/" + f.name());
    if (!got.ok()) {
      return absl::DataLossError("restore: file " + f.name() +
                                 " of the manifest: " + std::string(got.status().message()));
    }
    if (got->first != f.size() || got->second != f.sha256()) {
      return absl::DataLossError("restore: file " + f.name() + " does not match the manifest (" +
                                 std::to_string(got->first) + " bytes, manifest says " +
                                 std::to_string(f.size()) + "; checksum " +
                                 (got->second == f.sha256() ? "equal" : "differs") + ")");
    }
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name != kBackupManifestName && !listed.count(name)) {
      return absl::DataLossError("restore: " + dir + " holds " + name +
                                 ", which the manifest does not list");
    }
  }
  if (ec) return absl::UnavailableError("restore: list " + dir + ": " + ec.message());
  return manifest;
}

}  // namespace baton
