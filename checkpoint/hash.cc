#include "checkpoint/hash.h"

#include <cstdio>

#define XXH_INLINE_ALL
#include "xxhash.h"

namespace baton::checkpoint {
namespace hash_internal {

#if BATON_XXH3_X86_VARIANTS
uint64_t Xxh3Avx2(const void* data, size_t n);
void Xxh3UpdateAvx2(void* state, const void* data, size_t n);
#endif

namespace {

uint64_t Xxh3Baseline(const void* data, size_t n) { return XXH3_64bits(data, n); }
void Xxh3UpdateBaseline(void* state, const void* data, size_t n) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state), data, n);
}

}  // namespace

std::vector<Xxh3Impl> SupportedXxh3Impls() {
  std::vector<Xxh3Impl> impls = {{"baseline", Xxh3Baseline, Xxh3UpdateBaseline}};
#if BATON_XXH3_X86_VARIANTS
  // GCC's and clang's check includes the operating system's support (XGETBV): a CPU
  // with AVX under a kernel that does not save its registers reports none.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) impls.push_back({"avx2", Xxh3Avx2, Xxh3UpdateAvx2});
#endif
  return impls;
}

}  // namespace hash_internal

namespace {

const hash_internal::Xxh3Impl& Chosen() {
  static const hash_internal::Xxh3Impl chosen = hash_internal::SupportedXxh3Impls().back();
  return chosen;
}

}  // namespace

uint64_t Xxh3(const void* data, size_t n) { return Chosen().hash(data, n); }

static_assert(sizeof(XXH3_state_t) <= 576 && alignof(XXH3_state_t) <= 64,
              "Xxh3Stream::state_ must hold an XXH3_state_t");

Xxh3Stream::Xxh3Stream() : Xxh3Stream(Chosen()) {}

Xxh3Stream::Xxh3Stream(const hash_internal::Xxh3Impl& impl) : update_(impl.update) { Reset(); }

void Xxh3Stream::Update(const void* data, size_t n) { update_(state_, data, n); }

uint64_t Xxh3Stream::Digest() const {
  return XXH3_64bits_digest(reinterpret_cast<const XXH3_state_t*>(state_));
}

void Xxh3Stream::Reset() { XXH3_64bits_reset(reinterpret_cast<XXH3_state_t*>(state_)); }

const char* Xxh3Variant() { return Chosen().name; }

std::string HexU64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace baton::checkpoint
