// Moving shard files between memory and disk fast: the file is cut into units written or
// read by a few threads at once, each unit hashed as it passes (the shard checksum of
// FORMAT.md), one fsync per file. O_DIRECT reads keep threads x queue_depth units in
// flight (ReadQueue), so the disk stays busy while arrived units are hashed; each unit's
// aligned runs inside a buffer go in place (IoOptions::in_place), the rest through a
// bounce buffer.
// Internal to checkpoint/; the Checkpointer calls it. Thread-safe; each call uses its own
// threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/env.h"
#include "checkpoint/manifest.h"

namespace baton::checkpoint {

struct IoOptions {
  int threads = 2;                // parallel writers/readers per file
  uint64_t unit_bytes = 4 << 20;  // bytes per I/O call; a multiple of kChecksumChunkBytes
  bool direct_io = true;          // O_DIRECT writes and reads where the filesystem allows
  bool sync = true;               // false only in tests proving that the fsync matters
  int queue_depth = 2;            // units in flight per thread (SaveThreads for writes)
  // O_DIRECT straight between file and memory wherever they share a phase; false: only
  // for segments and targets whose memory starts page-aligned (Options::io_in_place).
  bool in_place = false;
};

// Threads a save runs, to copy into staging and to write. Writes are synchronous and a
// writer has none in flight while it gathers and hashes its next unit, so each thread's
// queue_depth writers get one more, as each read lane has one spare slot: threads x
// queue_depth units stay in flight while units are prepared.
inline int SaveThreads(const IoOptions& o) { return std::min(64, o.threads * (o.queue_depth + 1)); }

// Bytes of the file image at [offset, offset+size) that live at `data`. Bytes not covered
// by any segment are zeros.
struct WriteSegment {
  uint64_t offset = 0;
  const void* data = nullptr;
  uint64_t size = 0;
};

// Where bytes of the file at [offset, offset+size) go on a read. Bytes not covered are
// read (they count in the checksum) and dropped.
struct ReadTarget {
  uint64_t offset = 0;
  void* data = nullptr;
  uint64_t size = 0;
};

// Writes a file of `file_bytes` (a multiple of 4 KiB) from `segments` (sorted by offset,
// not overlapping), fsyncs and closes it; returns its size and checksum. On error the
// file may be partly written: the caller removes it.
absl::StatusOr<ShardInfo> WriteShardFile(Env* env, const std::string& path, uint64_t file_bytes,
                                         const std::vector<WriteSegment>& segments,
                                         const IoOptions& options);

// Reads all of `path` into `targets` (sorted, not overlapping) and checks its size and
// checksum against `expected`: DataLoss naming the file when they differ.
absl::Status ReadShardFile(Env* env, const std::string& path, const ShardInfo& expected,
                           const std::vector<ReadTarget>& targets, const IoOptions& options);

// The shard checksum of an in-memory file image (tests and tools).
uint64_t ShardChecksum(const void* data, uint64_t size);

}  // namespace baton::checkpoint
