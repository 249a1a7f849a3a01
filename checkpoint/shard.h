// The layout of one rank's shard file (FORMAT.md): a self-checked header naming every
// buffer, then each buffer at an offset with the same remainder modulo 4 KiB as its address
// in memory (so O_DIRECT moves its pages in place), zero padding between, the file a
// multiple of 4 KiB. Layout, header encoding and strict header parsing; no I/O.
// Internal to checkpoint/. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton::checkpoint {

// The header and the file size are multiples of this (O_DIRECT-friendly); a buffer's
// offset has its memory's remainder modulo this.
inline constexpr uint64_t kShardAlignment = 4096;
// n rounded down or up to a multiple of kShardAlignment (also O_DIRECT's unit).
inline uint64_t ShardAlignDown(uint64_t n) { return n / kShardAlignment * kShardAlignment; }
inline uint64_t ShardAlignUp(uint64_t n) { return ShardAlignDown(n + kShardAlignment - 1); }
// Version 1 put every buffer at a multiple of kShardAlignment; version 2 lets a buffer
// start at any of the kShardAlignment bytes after the previous one ends. Writers write 1
// whenever every offset is aligned, so that older libraries read those shards.
inline constexpr uint32_t kShardFormatVersion = 2;
// The shard checksum hashes the file in chunks of this many bytes (FORMAT.md).
inline constexpr uint64_t kChecksumChunkBytes = 64 << 10;
// Limits that keep a damaged header from asking for absurd allocations.
inline constexpr uint64_t kMaxShardBuffers = 1 << 16;
inline constexpr uint64_t kMaxBufferNameBytes = 1024;

struct BufferEntry {
  std::string name;
  uint64_t offset = 0;  // in the file
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
  uint64_t phase = 0;  // where the buffer lives in memory, modulo kShardAlignment
};

// Places the buffers in order after the header, each at the first offset with its phase.
// The layout depends only on the names, sizes and phases, so it stays fixed from step to
// step while the same memory is registered.
ShardHeader LayoutShard(int64_t step, int rank, int world_size,
                        const std::vector<BufferShape>& buffers);

// Exactly header.header_bytes bytes, zero-padded.
std::string EncodeShardHeader(const ShardHeader& header);

// How many leading bytes of a shard hold the header, from its first kShardAlignment bytes
// (which must be given). DataLoss if they are not a shard header.
absl::StatusOr<uint64_t> ShardHeaderBytes(const std::string& first_block);

// Parses and checks a whole header region: magic, version, its own checksum, and that
// buffers are ordered, inside the file, not overlapping and placed as their version says.
absl::StatusOr<ShardHeader> ParseShardHeader(const std::string& bytes);

}  // namespace baton::checkpoint
