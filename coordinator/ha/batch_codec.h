// A StoreBatch as bytes and back (v1::StoredBatch, store.proto): what the replicated log
// carries, so that every replica writes the leader's change into its own RocksDB.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "coordinator/store.h"

namespace baton::ha {

std::string EncodeBatch(const StoreBatch& batch);
// DataLoss when the bytes are not a StoredBatch.
absl::StatusOr<StoreBatch> DecodeBatch(std::string_view bytes);

}  // namespace baton::ha
