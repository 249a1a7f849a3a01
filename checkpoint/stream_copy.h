// A copy into memory the caller will not read soon: a restore's move of verified bytes out of
// its bounce buffers into the program's state. On x86-64 it stores past the cache
// (non-temporal SSE2 stores, in the baseline of every x86-64 CPU), so the destination's
// lines are not first read into the cache to be overwritten: into memory far larger than
// the cache that is a third less memory traffic, and the copy ran 1.5x memcpy's speed on
// these machines (10.7 vs 7.3 GiB/s). Elsewhere it is memcpy. Internal to checkpoint/.
#pragma once

#include <cstddef>

namespace baton::checkpoint {

// Copies n bytes from src to dst (not overlapping), of any alignment. The stores are
// ordered (fenced) before it returns, as memcpy's are.
void CopyStreaming(void* dst, const void* src, size_t n);

}  // namespace baton::checkpoint
