// The layout of one rank's shard file (FORMAT.md): a self-checked header naming every
// buffer, then each buffer at a 4 KiB-aligned offset, zero padding between, the file a
// multiple of 4 KiB. Layout, header encoding and strict header parsing; no I/O.
// Internal to checkpoint/. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton::checkpoint {

// Buffer offsets and the file size are multiples of this (O_DIRECT-friendly).
inline constexpr uint64_t kShardAlignment = 4096;
// The shard checksum hashes the file in chunks of this many bytes (FORMAT.md).
inline constexpr uint64_t kChecksumChunkBytes = 64 << 10;
// Limits that keep a damaged header from asking for absurd allocations.
inline constexpr uint64_t kMaxShardBuffers = 1 << 16;
inline constexpr uint64_t kMaxBufferNameBytes = 1024;

struct BufferEntry {
  std::string name;
  uint64_t offset = 0;  // in the file; a multiple of kShardAlignment
  uint64_t size = 0;
  friend bool operator==(const BufferEntry&, const BufferEntry&) = default;
};

struct ShardHeader {
  int64_t step = 0;
  int rank = 0;
  int world_size = 0;
  uint64_t header_bytes = 0;  // the header region, a multiple of kShardAlignment
  uint64_t file_bytes = 0;    // the whole file
  std::vector<BufferEntry> buffers;
  friend bool operator==(const ShardHeader&, const ShardHeader&) = default;
};

struct BufferShape {
  std::string name;
  uint64_t size = 0;
};

// Places the buffers in order after the header. The header size depends only on the
// names, so the layout stays fixed from step to step.
ShardHeader LayoutShard(int64_t step, int rank, int world_size,
                        const std::vector<BufferShape>& buffers);

// Exactly header.header_bytes bytes, zero-padded.
std::string EncodeShardHeader(const ShardHeader& header);

// How many leading bytes of a shard hold the header, from its first kShardAlignment bytes
// (which must be given). DataLoss if they are not a shard header.
absl::StatusOr<uint64_t> ShardHeaderBytes(const std::string& first_block);

// Parses and checks a whole header region: magic, version, its own checksum, and that
// buffers are aligned, ordered, inside the file and not overlapping.
absl::StatusOr<ShardHeader> ParseShardHeader(const std::string& bytes);

}  // namespace baton::checkpoint
