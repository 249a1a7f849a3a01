// The usage rollup (docs/accounting.md): what each (UTC day, tenant, user, priority class)
// used — GPU-seconds allocated and lost to evictions, jobs ended by how, evictions, and
// queue waits as a histogram so that percentiles merge across days. Charged from job
// records alone: a job's charges are a pure function of its record (Charge), so the
// coordinator adds, in the commit that changes a job, what that change charged, and a
// brute-force sum over job records gives the same rollup. Stored as one record per
// (day, tenant) that the store's merge operator adds to (usage::Merge). Thread-compatible.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/api.pb.h"
#include "proto/store.pb.h"

namespace baton::usage {

inline constexpr int64_t kDayMs = 86'400'000;
// Days since 1970-01-01 (UTC) holding `ms`.
int64_t DayOf(int64_t ms);

// Waits: bucket 0 under one second, then eight buckets per doubling (each within 6.25% of
// its midpoint) up to 2^30 s; longer waits share the last.
inline constexpr uint32_t kSubBuckets = 8;
inline constexpr uint32_t kBuckets = 1 + 31 * kSubBuckets;
uint32_t WaitBucket(double seconds);
// What a wait in `bucket` is reported as: the bucket's midpoint (0.5 s for bucket 0).
double BucketSeconds(uint32_t bucket);
// The smallest bucket value with at least `q` (0..1] of `counts` at or below it; 0 when empty.
double Percentile(const std::array<uint64_t, kBuckets>& counts, double q);

// GPUs an attempt was given (its placement's GPU ids), and the GPU-seconds it held them:
// from its placement to its end (0 while it has not ended).
uint32_t GpusOf(const v1::Attempt& a);
double AllocatedGpuSeconds(const v1::Attempt& a);
double AllocatedGpuSeconds(const v1::Job& job);  // every ended attempt's

// How much of a job's record has been charged: its first `attempts` attempts (each once it
// has ended), the wait before its first placement, its end.
struct Mark {
  uint32_t attempts = 0;
  bool waited = false;
  bool ended = false;
  bool operator==(const Mark&) const = default;
};
// What a record holds to be charged: the mark a brute-force sum over records charges to.
Mark MarkOf(const v1::Job& job);

// One (user, class) row's figures, being added up.
struct Cell {
  double gpu_seconds = 0;
  double lost_gpu_seconds = 0;
  uint32_t succeeded = 0, failed = 0, cancelled = 0, evictions = 0;
  std::map<uint32_t, uint32_t> waits;  // bucket -> count
  void Add(const Cell& other);
  bool operator==(const Cell&) const = default;
};
using Cells = std::map<std::pair<std::string, std::string>, Cell>;  // (user, class) -> cell
v1::UsageRecord ToRecord(const Cells& cells);
// Whether the record's row arrays agree (lengths, name indexes, wait ranges).
bool WellFormed(const v1::UsageRecord& rec);
// Adds a well-formed record; a damaged one adds nothing (rather than failing every query
// over its day): false.
bool AddRecord(const v1::UsageRecord& rec, Cells& into);
// Adds row `i` of a well-formed record to `into`: a Cell, or any sum with the same
// counters and `waits` indexed by bucket. `w` is the row's first wait entry (0 for row 0;
// rows are added in order), left past its last.
template <typename Into>
void AddRow(const v1::UsageRecord& rec, int i, uint32_t& w, Into& into) {
  into.gpu_seconds += rec.gpu_seconds(i);
  into.lost_gpu_seconds += rec.lost_gpu_seconds(i);
  into.succeeded += rec.succeeded(i);
  into.failed += rec.failed(i);
  into.cancelled += rec.cancelled(i);
  into.evictions += rec.evictions(i);
  for (; w < rec.wait_end(i); ++w) {
    into.waits[std::min(rec.wait_buckets(static_cast<int>(w)), kBuckets - 1)] +=
        rec.wait_counts(static_cast<int>(w));
  }
}
// a + b, as the store's merge operator adds records.
v1::UsageRecord Merge(const v1::UsageRecord& a, const v1::UsageRecord& b);

// The charges of job changes, by (day, tenant), until taken as deltas for a commit.
class Rollup {
 public:
  // Adds what `job`'s record holds beyond `from`; returns its mark now.
  Mark Charge(const v1::Job& job, Mark from);
  bool empty() const { return days_.empty(); }
  std::vector<v1::UsageDelta> Take();
  const std::map<std::pair<int64_t, std::string>, Cells>& days() const { return days_; }

 private:
  Cell& At(int64_t day, const v1::Job& job);
  std::map<std::pair<int64_t, std::string>, Cells> days_;
};

}  // namespace baton::usage
