// A coordinator backup on disk: the files of a RocksDB checkpoint, side by side, and
// `baton-backup.json` (the BackupManifest in proto3 JSON: every file's size and SHA-256).
// `baton admin backup` writes one (BackupWriter); `baton-coordinator restore` checks one
// (VerifyBackupDir) before copying it into a data dir. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton {

inline constexpr char kBackupManifestName[] = "baton-backup.json";

// Incremental SHA-256 (OpenSSL), lowercase hex at the end.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t n);
  std::string HexDigest();  // once

 private:
  void* ctx_;  // EVP_MD_CTX
};

// A name the backup may hold: a plain file name (no '/', not "." or "..", not the
// manifest's, printable ASCII, at most 255 bytes). InvalidArgument naming it otherwise.
absl::Status CheckBackupFileName(const std::string& name);

// Writes a backup from the stream's chunks into `<dir>.partial-<pid>`, then renames it to
// `dir` once every file matches the manifest, so `dir` is complete or absent.
class BackupWriter {
 public:
  // FailedPrecondition if `dir` exists.
  static absl::StatusOr<BackupWriter> Start(const std::string& dir);
  BackupWriter(BackupWriter&&) noexcept;
  ~BackupWriter();  // removes the partial directory unless Finish succeeded

  // Files must come one by one, each from offset 0 with no gap (DataLoss otherwise).
  absl::Status Add(const v1::BackupChunk& chunk);
  // Checks every file against the manifest, writes it, syncs and renames.
  absl::Status Finish(const v1::BackupManifest& manifest);
  uint64_t bytes() const { return bytes_; }
  size_t files() const { return done_.size() + (fd_ >= 0 ? 1 : 0); }

 private:
  BackupWriter() = default;
  absl::Status CloseCurrent();

  std::string dir_, partial_;
  int fd_ = -1;
  std::string file_;  // the file being written
  uint64_t offset_ = 0;
  uint64_t bytes_ = 0;
  std::unique_ptr<Sha256> hash_;
  // name -> (size, sha256) of the files written so far
  std::map<std::string, std::pair<uint64_t, std::string>> done_;
  bool finished_ = false;
};

// Reads `dir`'s manifest and checks that the directory holds exactly its files, each of
// its size and SHA-256. DataLoss naming the first file that does not match.
absl::StatusOr<v1::BackupManifest> VerifyBackupDir(const std::string& dir);

}  // namespace baton
