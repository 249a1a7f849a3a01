// Job ids and store keys. Job ids are positive integers (as in Slurm) allocated by the
// coordinator; keys are zero-padded so RocksDB's byte order is numeric order.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace baton {

// "17" -> 17. Rejects 0, signs, junk and overflow with a message naming the text.
absl::StatusOr<uint64_t> ParseJobId(std::string_view text);

// 17 -> "00000000000000000017" (20 digits: every uint64 fits).
std::string PaddedKey(uint64_t n);
// "00000000000000000017/00000000000000000003": a job's event number 3.
std::string EventKey(uint64_t job_id, uint64_t seq);

// 128 random bits as 32 hex digits (exec secrets, cluster ids), from getrandom(2).
std::string RandomHex128();

// Names of nodes, jobs and tenants: [A-Za-z0-9][A-Za-z0-9._-]{0,62}.
bool IsValidName(std::string_view name);

}  // namespace baton
