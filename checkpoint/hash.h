// Checksums for checkpoint files: XXH3-64 (xxhash used header-only, so a machine without
// the libxxhash package can build with a carried xxhash.h; only hash*.cc include it). On
// x86-64 hashing runs with AVX2 where the CPU has it (else the build's baseline, SSE2),
// chosen once at first use; every variant gives the same value, so checkpoints move
// freely between machines. Internal to checkpoint/. Pure functions; thread-safe (a
// stream: one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace baton::checkpoint {

namespace hash_internal {

// One compiled variant of XXH3. `state` is an XXH3_state_t.
struct Xxh3Impl {
  const char* name;
  uint64_t (*hash)(const void* data, size_t n);
  void (*update)(void* state, const void* data, size_t n);
};

// Every variant this build has and this CPU can run, baseline first and the one Xxh3
// uses last; tests check that they agree.
std::vector<Xxh3Impl> SupportedXxh3Impls();

}  // namespace hash_internal

// XXH3-64 of `n` bytes at `data`.
uint64_t Xxh3(const void* data, size_t n);

// XXH3-64 of bytes fed in pieces: Digest() equals Xxh3 of their concatenation.
class Xxh3Stream {
 public:
  Xxh3Stream();
  // With a given variant (tests).
  explicit Xxh3Stream(const hash_internal::Xxh3Impl& impl);

  void Update(const void* data, size_t n);
  // The hash of everything fed since construction or the last Reset.
  uint64_t Digest() const;
  void Reset();

 private:
  void (*update_)(void* state, const void* data, size_t n);
  alignas(64) unsigned char state_[576];  // an XXH3_state_t (hash.cc checks the size)
};

// Which variant Xxh3 and Xxh3Stream use: "avx2" or "baseline".
const char* Xxh3Variant();

// 16 lowercase hex digits.
std::string HexU64(uint64_t value);

}  // namespace baton::checkpoint
