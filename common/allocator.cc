#include "common/allocator.h"

#include <cstddef>

// jemalloc's control interface, weak: null unless the process links jemalloc.
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen)
    __attribute__((weak));

namespace baton {

bool ThreadCacheOff() {
  if (mallctl == nullptr) return false;
  bool off = false;
  return mallctl("thread.tcache.enabled", nullptr, nullptr, &off, sizeof(off)) == 0;
}

}  // namespace baton
