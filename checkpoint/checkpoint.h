// libbaton_checkpoint: snapshot and restore of one rank's training state, sharded per rank,
// committed atomically by rank 0's MANIFEST, verified on restore (FORMAT.md). Training
// programs create one Checkpointer per process, register their buffers once, then call
// SaveAsync/Save at step boundaries and RestoreLatest at start. Not thread-safe: call it
// from one thread; an async save runs on the Checkpointer's own background thread.
//
//   LocalCollective collective;                  // or *MpiCollective::Create()
//   auto ckpt = *Checkpointer::Create({.dir = "/shared/ckpt/job-7"}, &collective);
//   ckpt->RegisterHostBuffer("weights", w.data(), w.size() * sizeof(float));
//   auto restored = *ckpt->RestoreLatest();      // same step on every rank, or nullopt
//   int64_t step = restored ? restored->step + 1 : 0;
//   for (;; ++step) {
//     Train(step);
//     if (*watcher->ShouldStop(stop_collective)) { ckpt->Save(step); break; }  // preemption.h
//     if (step % 100 == 0) ckpt->SaveAsync(step);  // stalls only for the copy
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/collective.h"
#include "checkpoint/device_memory.h"
#include "checkpoint/env.h"
#include "common/clock.h"

namespace baton::checkpoint {

struct Options {
  // Directory every rank of the job sees; "" reads BATON_CHECKPOINT_DIR. Rank 0 creates
  // it if missing (its parent must exist).
  std::string dir = {};
  // Committed checkpoints kept after each save, the one just saved among them; 0 keeps all.
  int keep_last = 3;
  // Threads reading one rank's shard at once. A save copies into staging and writes with
  // io_threads x (io_queue_depth + 1) threads: its writes are synchronous, and one writer
  // per thread prepares a unit while the others' writes are in flight.
  int io_threads = 2;
  // Bytes per write or read call; a multiple of 64 KiB. 4 MiB: one block-layer request
  // where max_sectors_kb is 4096 (virtio's default; larger units are split in two).
  uint64_t io_unit_bytes = 4 << 20;
  // Units each I/O thread keeps in flight, so that io_threads x io_queue_depth units
  // (16 MiB by default, as much as a strict 16 MiB reader or writer has) are read at once
  // (O_DIRECT and Linux AIO) while arrived ones are verified, or written at once while
  // the next ones are prepared. More in flight restored slower on the benchmark machines'
  // disk (checkpoint/README.md).
  int io_queue_depth = 2;
  // O_DIRECT shard writes and reads where the filesystem allows them (bypasses the page
  // cache: a restore reads at the disk's speed, a save does not evict the job's data).
  bool direct_io = true;
  // O_DIRECT moves a buffer's pages straight between file and memory whatever the memory's
  // offset within a page (each buffer is then stored at that offset modulo 4 KiB, shard
  // format 2, which libraries older than this option do not read; FORMAT.md).
  // false: only buffers that start on a page boundary (aligned_alloc, mmap, pinned or
  // huge-page memory) go in place, the rest through huge-page bounce buffers and a copy.
  // A direct request holds at most max_segments runs of physically contiguous memory, so
  // from 4 KiB pages a request carries at most max_segments x 4 KiB (~1 MiB on virtio);
  // on the benchmark machines' virtio disk the bounce buffers were faster despite the
  // copy (`baton-bench-checkpoint --explain`: "restore in place"). Set it where requests
  // of that size already saturate the disk (NVMe) or the buffers are on huge pages.
  bool io_in_place = false;
  // Recorded in manifests and the progress file; -1 reads BATON_ATTEMPT (unset: 0).
  int64_t attempt = -1;
  // Where rank 0 reports progress; "" means BATON_PROGRESS_FILE, else <dir>/PROGRESS.
  std::string progress_file = {};
  // The filesystem seam; nullptr is the real filesystem. Not owned.
  Env* env = nullptr;
  // Needed by RegisterDeviceBuffer: NewCudaDeviceMemory() in CUDA builds. Not owned.
  DeviceMemory* device_memory = nullptr;
  // Receives skipped checkpoints and background failures (also from the async save's
  // thread, so it must be thread-safe); unset writes them to stderr.
  std::function<void(const std::string&)> log = {};
  // Unix time for manifests and progress; nullptr is the real clock. Not owned.
  Clock* clock = nullptr;
  // Tests only: skip one of the save's fsyncs, to prove the crash tests would notice.
  SyncPoint skip_sync_for_testing = SyncPoint::kNone;
};

// A committed checkpoint as its MANIFEST describes it.
struct CheckpointInfo {
  int64_t step = 0;
  int64_t attempt = 0;  // BATON_ATTEMPT of the job attempt that saved it
  int world_size = 0;
  int64_t time_ms = 0;  // unix ms of the commit
  uint64_t bytes = 0;   // all shards together
  std::map<std::string, std::string> metadata;
};

class Checkpointer {
 public:
  // `collective` must outlive the Checkpointer and be used by nothing else while an async
  // save runs. InvalidArgument for bad options or environment values.
  static absl::StatusOr<std::unique_ptr<Checkpointer>> Create(Options options,
                                                              Collective* collective);
  // Waits for an async save and for pruning in flight (a failure is logged).
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Registers `size` bytes at `data` under a unique `name` (at most 1 KiB). The memory must
  // stay valid while the Checkpointer lives; it is read by Save/SaveAsync and overwritten
  // by RestoreLatest. Every rank registers its own buffers; ranks may differ.
  absl::Status RegisterHostBuffer(const std::string& name, void* data, size_t size);
  // Same for device memory; needs Options::device_memory. Saves stage it through pinned
  // host memory with asynchronous copies.
  absl::Status RegisterDeviceBuffer(const std::string& name, void* device_data, size_t size);

  // User metadata saved in the next manifests (rank 0's values count). After a restore it
  // holds the restored checkpoint's metadata. Keys 1 B..1 KiB, values up to 64 KiB.
  absl::Status SetMetadata(const std::string& key, const std::string& value);
  const std::map<std::string, std::string>& metadata() const;

  // Collective: every rank calls it with the same step. Returns once the checkpoint is
  // committed (its MANIFEST durable) or failed everywhere; a failed save leaves the
  // previous checkpoints intact. Saving a step that exists replaces it. Old checkpoints
  // beyond keep_last are removed in the background afterwards.
  absl::Status Save(int64_t step);
  // Collective like Save, but returns once the state is copied to staging memory; a
  // background thread writes and commits it. A previous async save is waited for first.
  // Needs a collective that SupportsBackgroundThread (MPI: MPI_THREAD_MULTIPLE).
  absl::Status SaveAsync(int64_t step);
  // Waits for the async save in flight and for the pruning of old checkpoints that runs
  // in the background after each commit; returns the first error of any async save since
  // the last Wait (background failures are also logged when they happen).
  absl::Status Wait();
  // Allocates and pre-faults the staging memory SaveAsync copies into (else the first
  // SaveAsync does), so that no save pays for page faults.
  absl::Status ReserveStaging();

  // Collective: restores the newest checkpoint whose shards all verify, the same step on
  // every rank, into the registered buffers; nullopt when there is none. Damaged,
  // truncated and uncommitted checkpoints are skipped with a logged reason. Errors:
  // FailedPrecondition when the newest usable checkpoint has another world size or other
  // buffers than registered; DataLoss when checkpoints exist but none verifies after
  // buffers were already overwritten.
  absl::StatusOr<std::optional<CheckpointInfo>> RestoreLatest();
  // Committed checkpoints, newest first, from their manifests (shards are not read).
  // Local: needs no other rank. Waits for background work first, like Wait.
  absl::StatusOr<std::vector<CheckpointInfo>> List();

  // The step this process last restored or committed; -1 if none.
  int64_t last_committed_step() const;
  int rank() const;
  int world_size() const;

  struct State;  // internal (checkpoint_internal.h)

 private:
  explicit Checkpointer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace baton::checkpoint
