// The Checkpointer's internals shared by checkpoint.cc (creation, registration, staging,
// save entry points), save.cc (the commit protocol) and restore.cc. Not a public header.
// Thread-compatible: the training thread and at most one background save, which gets its
// own SaveRequest and is joined before the training thread touches shared state again
// (committed_step, the one field both write, is atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/shard.h"
#include "checkpoint/shard_io.h"

namespace baton::checkpoint {

struct RegisteredBuffer {
  std::string name;
  void* data = nullptr;
  uint64_t size = 0;
  bool device = false;
};

// Page-aligned, pre-faulted memory laid out exactly like this rank's shard file; pinned
// (through DeviceMemory) when device buffers pass through it.
class Staging {
 public:
  Staging() = default;
  ~Staging() { Free(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  // Keeps the current memory when it is large enough and of the right kind.
  absl::Status Ensure(uint64_t bytes, DeviceMemory* pinned_by);
  char* data() const { return data_; }

 private:
  void Free();
  char* data_ = nullptr;
  uint64_t bytes_ = 0;
  DeviceMemory* pinned_by_ = nullptr;
};

// One save as the commit protocol sees it; owns nothing the training thread changes.
struct SaveRequest {
  int64_t step = 0;
  uint64_t file_bytes = 0;
  std::string header;                  // used when segments point at it
  std::vector<WriteSegment> segments;  // the shard's file image
  std::map<std::string, std::string> metadata;
};

struct Checkpointer::State {
  Options options;
  Env* env = nullptr;
  Collective* collective = nullptr;
  Clock* clock = nullptr;
  std::unique_ptr<CheckpointDir> dir;
  int64_t attempt = 0;
  std::string progress_path;
  IoOptions io;
  std::vector<RegisteredBuffer> buffers;
  std::map<std::string, std::string> metadata;
  std::atomic<int64_t> committed_step{-1};  // the background save updates it
  Staging staging;
  std::thread async_thread;
  std::thread pruner;         // rank 0: removes old checkpoints after a commit
  absl::Status async_result;  // written by the background thread, read after join
  absl::Status async_error;   // first async error since the last Wait

  bool is_root() const { return collective->rank() == 0; }
  void Log(const std::string& message) const;
  ShardHeader Layout(int64_t step) const;
  // Rank 0 only; failures are logged, never fatal (the manifests are the truth).
  void WriteProgress(const std::string& state, int64_t step) const;
  // Joins a background save (folding its result into async_error), then the pruner.
  void JoinBackground();
  // Rank 0 after committing `step`: prunes on the pruner thread, off the save's path
  // (unlinking gigabytes can take longer than the fsyncs of a save).
  void StartPrune(int64_t step);
};

// The collective commit protocol of FORMAT.md: rank 0 prepares step-<N>, every rank writes
// and fsyncs its shard, results are gathered, rank 0 commits the MANIFEST, everyone hears
// the outcome; rank 0 then prunes. Updates state.committed_step on success.
absl::Status RunSave(Checkpointer::State& state, const SaveRequest& request);

// A status across the collective: "" for OK, else "<code> <message>".
std::string StatusToWire(const absl::Status& status);
absl::Status WireToStatus(const std::string& wire);

}  // namespace baton::checkpoint
