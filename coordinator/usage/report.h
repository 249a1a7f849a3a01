// A usage report (the Usage RPC, `baton usage`): rollup records of a range of days folded
// into one line per tenant, user or class, with wait percentiles from the merged
// histograms. Pure: fed records as the store returns them. Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "coordinator/usage/rollup.h"
#include "proto/api.pb.h"

namespace baton::usage {

class Report {
 public:
  // `tenants`: the only tenants counted (empty: every one).
  Report(v1::UsageGroup by, std::set<std::string> tenants)
      : by_(by), tenants_(std::move(tenants)) {}
  // Whether `tenant`'s records are counted.
  bool Wants(const std::string& tenant) const {
    return tenants_.empty() || tenants_.count(tenant) > 0;
  }
  void Add(const std::string& tenant, const v1::UsageRecord& rec);
  // The lines by key.
  v1::UsageResponse Finish() const;

 private:
  struct Line {
    double gpu_seconds = 0, lost_gpu_seconds = 0;
    uint64_t succeeded = 0, failed = 0, cancelled = 0, evictions = 0;
    std::array<uint64_t, kBuckets> waits{};
  };
  v1::UsageGroup by_;
  std::set<std::string> tenants_;
  absl::flat_hash_map<std::string, Line> lines_;
};

}  // namespace baton::usage
