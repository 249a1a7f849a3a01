// The MANIFEST of one checkpoint step: what rank 0 writes last to commit it (FORMAT.md has
// the text format). Encoding and strict parsing only; the Checkpointer decides where it
// lives and when it is written. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton::checkpoint {

inline constexpr int kFormatVersion = 1;
// A manifest larger than this is rejected on write and on read (it is metadata, not data).
inline constexpr size_t kMaxManifestBytes = 1 << 20;

struct ShardInfo {
  uint64_t size = 0;  // bytes of rank-<r>.shard
  uint64_t xxh3 = 0;  // the shard checksum defined in FORMAT.md
  friend bool operator==(const ShardInfo&, const ShardInfo&) = default;
};

struct Manifest {
  int format_version = kFormatVersion;
  int64_t step = 0;
  int64_t attempt = 0;  // BATON_ATTEMPT of the job that wrote it (0: unset)
  int world_size = 0;
  int64_t time_ms = 0;                          // unix ms when rank 0 committed it
  std::vector<ShardInfo> shards;                // indexed by rank; world_size entries
  std::map<std::string, std::string> metadata;  // user key/values, any bytes
  friend bool operator==(const Manifest&, const Manifest&) = default;
};

std::string EncodeManifest(const Manifest& manifest);

// Rejects anything not written by EncodeManifest: a wrong checksum line, unknown or
// repeated keys, missing shards, bad numbers. The message names the line at fault.
absl::StatusOr<Manifest> ParseManifest(const std::string& text);

}  // namespace baton::checkpoint
