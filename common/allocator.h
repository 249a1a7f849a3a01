// The process's allocator, as far as baton tunes it. The coordinator links jemalloc
// (coordinator/CMakeLists.txt); everything else, tests and sanitizer builds included,
// runs on glibc's malloc, where these calls do nothing.
#pragma once

namespace baton {

// Turns off the calling thread's allocator cache (jemalloc's tcache) and gives back what
// it held. For threads that mostly wait, one per client (a web live view holds one for as
// long as its page is open): jemalloc keeps ~150 KiB of cached blocks per thread, three
// times the rest of a live view's memory (baton-bench-web, rss_bytes_per_stream). True
// when jemalloc took it.
bool ThreadCacheOff();

}  // namespace baton
