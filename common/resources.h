// Resource quantities and their human spellings (Kubernetes/Slurm style): "2", "500m" or
// "0.5" CPUs; "16Gi", "512M" bytes; "30s", "2h" durations; "100mbit", "1gbit" rates.
// Used by the CLI, the coordinator and the agent alike. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace baton {

// What one node gives a job, or has free. GPUs are counted; which GPUs is placement's job.
struct Resources {
  uint64_t cpu_millis = 0;
  uint64_t memory_bytes = 0;
  uint32_t gpus = 0;

  bool Fits(const Resources& free) const {
    return cpu_millis <= free.cpu_millis && memory_bytes <= free.memory_bytes && gpus <= free.gpus;
  }
  Resources& operator+=(const Resources& o);
  // Saturates at zero: freeing more than was held is a bug upstream, not an underflow.
  Resources& operator-=(const Resources& o);
  friend bool operator==(const Resources&, const Resources&) = default;
};

// "2" -> 2000, "0.5" -> 500, "250m" -> 250. Rejects negatives, junk and > 1M cores.
absl::StatusOr<uint64_t> ParseCpuMillis(std::string_view text);
// "1024", "4K", "4Ki", "16G", "16Gi", "16GiB", "1.5Gi". Binary suffixes are powers of
// 1024, decimal ones powers of 1000 (Kubernetes quantities).
absl::StatusOr<uint64_t> ParseBytes(std::string_view text);
// Every duration baton reads, flags, specs and policies alike: absl::ParseDuration's
// form ("500ms", "1h30m", "1.5s") plus a `d` suffix for days ("30d", "1d12h"), and a bare
// number meaning seconds ("90"). Not negative, not infinite.
absl::StatusOr<absl::Duration> ParseDuration(std::string_view text);
// ParseDuration in whole seconds ("500ms" is refused here: the field counts seconds).
absl::StatusOr<uint64_t> ParseDurationSeconds(std::string_view text);
// "100" (Mbit/s), "100mbit", "1gbit", "1.5gbit" -> Mbit/s.
absl::StatusOr<uint64_t> ParseMbps(std::string_view text);

std::string FormatCpuMillis(uint64_t millis);  // 2000 -> "2", 500 -> "500m"
std::string FormatBytes(uint64_t bytes);       // 17179869184 -> "16Gi"
std::string FormatDurationMs(int64_t ms);      // 93000 -> "1m33s"

// The wait after the `n`-th event in a row (evictions, crashes, failures): `base` for the
// first, doubled for each one after, at most `cap`; zero for n = 0. absl::Duration
// saturates, so no configured value overflows it.
absl::Duration DoublingBackoff(absl::Duration base, absl::Duration cap, uint32_t n);
// now_ms + wait, at most the end of int64 time: a huge wait never wraps into the past.
int64_t DeadlineMs(int64_t now_ms, absl::Duration wait);

}  // namespace baton
