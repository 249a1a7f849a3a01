// A usage report (the Usage RPC, `baton usage`): rollup records of a range of days folded
// into one line per tenant, user or class, with wait percentiles from the merged
// histograms. Pure: fed records as the store returns them. Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "coordinator/usage/rollup.h"
#include "proto/api.pb.h"

namespace baton::usage {

class Report {
 public:
  // `tenants`: the only tenants counted (empty: every one).
  Report(v1::UsageGroup by, const std::set<std::string>& tenants)
      : by_(by), tenants_(tenants.begin(), tenants.end()) {}
  // Whether `tenant`'s records are counted.
  bool Wants(std::string_view tenant) const {
    return tenants_.empty() || tenants_.find(tenant) != tenants_.end();
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
  // A tenant's records mostly name the same users and classes day after day: the lines
  // its last record's names mapped to, reused while the names are the same.
  struct Names {
    std::vector<std::string> names;
    std::vector<Line*> lines;  // by name index; nullptr until a row uses it
  };
  v1::UsageGroup by_;
  std::set<std::string, std::less<>> tenants_;     // looked up by string_view
  absl::node_hash_map<std::string, Line> lines_;   // node-stable: Names point into it
  absl::flat_hash_map<std::string, Names> names_;  // by tenant
};

}  // namespace baton::usage
