// A RocksDB FileSystem that models a power loss: writes reach the real files (and the
// page cache) as usual, but the wrapper remembers how much of each file was synced.
// Crash() makes every later write fail; DropUnsyncedData() then truncates each file it
// saw written to its last synced length — what a disk holds after the power goes.
// kill -9 cannot test this: the page cache survives a process death.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "rocksdb/file_system.h"

namespace baton::testing {

class PowerLossFs : public rocksdb::FileSystemWrapper {
 public:
  explicit PowerLossFs(std::shared_ptr<rocksdb::FileSystem> base)
      : rocksdb::FileSystemWrapper(std::move(base)) {}
  const char* Name() const override { return "PowerLossFs"; }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& dst,
                               const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& fname, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;

  // From now on every write, sync and new file fails: the machine is off.
  void Crash();
  // Truncates every written file to the bytes that were synced. Returns the bytes lost.
  uint64_t DropUnsyncedData();

  // Used by the file wrapper.
  bool crashed();
  void Appended(const std::string& fname, uint64_t bytes);
  void Synced(const std::string& fname);

 private:
  struct FileState {
    uint64_t size = 0;    // bytes written through this wrapper
    uint64_t synced = 0;  // of which synced
  };
  std::mutex mu_;
  bool crashed_ = false;
  std::map<std::string, FileState> files_;
};

}  // namespace baton::testing
