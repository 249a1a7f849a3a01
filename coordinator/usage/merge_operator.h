// The store's `usage` family adds rollup records instead of replacing them (RocksDB's
// associative merge operator over v1::UsageRecord, usage::Merge): a commit writes only
// what it charged, with no read of the record it adds to.
#pragma once

#include <memory>

namespace rocksdb {
class MergeOperator;
}

namespace baton::usage {

std::shared_ptr<rocksdb::MergeOperator> NewMergeOperator();

}  // namespace baton::usage
