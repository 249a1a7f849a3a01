// Softirq counts from /proc/softirqs, for tests and benchmarks that check on which CPU
// the kernel did a flow's packet work. Header-only; thread-safe.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace baton::testing {

// NET_TX softirqs run so far on `cpu`; -1 when /proc/softirqs has no such line or column.
inline int64_t NetTxSoftirqs(int cpu) {
  std::ifstream in("/proc/softirqs");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (name != "NET_TX:") continue;
    int64_t n = -1;
    for (int i = 0; i <= cpu; ++i) {
      if (!(words >> n)) return -1;
    }
    return n;
  }
  return -1;
}

}  // namespace baton::testing
