// Checksums for checkpoint files: XXH3-64, header-only (XXH_INLINE_ALL), so a machine
// without the libxxhash package can build with a carried xxhash.h. Internal to
// checkpoint/. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#define XXH_INLINE_ALL
#include "xxhash.h"

namespace baton::checkpoint {

inline uint64_t Xxh3(const void* data, size_t n) { return XXH3_64bits(data, n); }

// 16 lowercase hex digits.
std::string HexU64(uint64_t value);

}  // namespace baton::checkpoint
