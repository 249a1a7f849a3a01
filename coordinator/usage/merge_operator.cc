#include "coordinator/usage/merge_operator.h"

#include "coordinator/usage/rollup.h"
#include "rocksdb/merge_operator.h"

namespace baton::usage {
namespace {

class UsageMerge : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    // The first operand on no base (what every read of a fresh key sees): itself.
    if (existing == nullptr) {
      new_value->assign(value.data(), value.size());
      return true;
    }
    v1::UsageRecord a, b;
    if (!a.ParseFromArray(existing->data(), static_cast<int>(existing->size()))) {
      return false;  // corruption: RocksDB reports it to the reader
    }
    if (!b.ParseFromArray(value.data(), static_cast<int>(value.size()))) return false;
    return usage::Merge(a, b).SerializeToString(new_value);
  }
  const char* Name() const override { return "baton.UsageMerge"; }
};

}  // namespace

std::shared_ptr<rocksdb::MergeOperator> NewMergeOperator() {
  return std::make_shared<UsageMerge>();
}

}  // namespace baton::usage
