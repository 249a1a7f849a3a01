#include "common/ids.h"

#include <sys/random.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <random>

#include "absl/strings/escaping.h"

namespace baton {

absl::StatusOr<uint64_t> ParseJobId(std::string_view text) {
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id == 0) {
    return absl::InvalidArgumentError("invalid job id '" + std::string(text) +
                                      "': expected a positive integer");
  }
  return id;
}

std::string PaddedKey(uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(n));
  return buf;
}

std::string EventKey(uint64_t job_id, uint64_t seq) {
  return PaddedKey(job_id) + "/" + PaddedKey(seq);
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

// getrandom(2), the kernel's generator: a std::random_device per call probed the CPU
// (CPUID, a VM exit on a virtual machine) every time, 2% of the coordinator's CPU in the
// end-to-end benchmark when exec secrets were made that way.
std::string RandomHex128() {
  char bits[16];
  // Up to 256 bytes come whole and uninterrupted; short only without getrandom (ENOSYS).
  if (getrandom(bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
    std::random_device rd;  // the library's own source
    for (char& b : bits) b = static_cast<char>(rd());
  }
  return absl::BytesToHexString(absl::string_view(bits, sizeof bits));
}

}  // namespace baton
