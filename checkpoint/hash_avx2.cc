// XXH3 with AVX2: compiled with -mavx2 and called only where the CPU has it (hash.cc).
// It includes nothing of C++'s library: with XXH_INLINE_ALL every xxhash function is
// internal to this file, so no code built for AVX2 can be picked by the linker for the
// rest of the program, which must run on any x86-64.
#include <stddef.h>
#include <stdint.h>

#define XXH_VECTOR XXH_AVX2
#define XXH_INLINE_ALL
#include "xxhash.h"

namespace baton::checkpoint::hash_internal {

uint64_t Xxh3Avx2(const void* data, size_t n) { return XXH3_64bits(data, n); }

void Xxh3UpdateAvx2(void* state, const void* data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, n);
}

}  // namespace baton::checkpoint::hash_internal
