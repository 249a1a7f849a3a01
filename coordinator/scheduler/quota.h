// Internal to the scheduler: tenant quotas within one pass. Each tenant has a nominal
// (guaranteed) amount, may borrow up to its borrowing limit from what others leave idle
// (each lender lends at most its lending limit) and from capacity no tenant is nominally
// given. Used by plan.cc (admission order and checks) and preemption.cc (reclaim).
// Not thread-safe: one pass, one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/resources.h"

namespace baton::sched::internal {

constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max() / 4;

// A GPU in Amount::gpus: hundredths, so that an MPS share counts as its fraction.
constexpr uint64_t kGpuUnits = 100;

// Quantities summed over a gang's nodes (GPUs count whole GPUs and MIG slices alike, each
// as kGpuUnits; an MPS share as its percent).
struct Amount {
  uint64_t gpus = 0, millis = 0, mem = 0;

  Amount& operator+=(const Amount& o) {  // saturating at kInf
    gpus = std::min(gpus + o.gpus, kInf);
    millis = std::min(millis + o.millis, kInf);
    mem = std::min(mem + o.mem, kInf);
    return *this;
  }
  bool operator<=(const Amount& o) const {
    return gpus <= o.gpus && millis <= o.millis && mem <= o.mem;
  }
  bool IsZero() const { return gpus == 0 && millis == 0 && mem == 0; }
};
inline Amount operator+(Amount a, const Amount& b) { return a += b; }
// Per dimension, floored at zero.
inline Amount Minus(const Amount& a, const Amount& b) {
  return {a.gpus > b.gpus ? a.gpus - b.gpus : 0, a.millis > b.millis ? a.millis - b.millis : 0,
          a.mem > b.mem ? a.mem - b.mem : 0};
}
inline Amount Min(const Amount& a, const Amount& b) {
  return {std::min(a.gpus, b.gpus), std::min(a.millis, b.millis), std::min(a.mem, b.mem)};
}
Amount FromResources(const Resources& r);  // unlimited fields become kInf

struct TenantQuota {
  bool has_quota = false;  // false: never limited, never borrowing, never lending
  Amount nominal, borrowing_limit, lending_limit;
};

class QuotaBook {
 public:
  enum class Verdict {
    kWithin,           // fits the nominal quota
    kBorrow,           // over nominal, and the borrowing is allowed
    kClassNoBorrow,    // over nominal and the class never borrows
    kOverBorrowLimit,  // beyond nominal + borrowing limit
    kNoLendable,       // others lend too little right now
  };

  QuotaBook() = default;
  QuotaBook(std::vector<TenantQuota> tenants, const Amount& capacity);

  Verdict Check(uint32_t tenant, const Amount& ask, bool class_borrows) const;
  void Add(uint32_t tenant, const Amount& a);
  bool Borrowing(uint32_t tenant) const;
  Amount Borrowed(uint32_t tenant) const;  // use beyond nominal
  const Amount& Use(uint32_t tenant) const { return use_[tenant]; }
  const TenantQuota& Quota(uint32_t tenant) const { return quota_[tenant]; }
  // Counts Adds: a verdict stays the same while it does not move.
  uint64_t version() const { return version_; }

 private:
  Amount Lends(uint32_t tenant, const Amount& use) const;

  std::vector<TenantQuota> quota_;
  std::vector<Amount> use_;
  Amount unassigned_;      // capacity no tenant holds nominally
  Amount lendable_;        // unassigned_ + what every lender lends now
  Amount borrowed_total_;  // what every tenant uses beyond its nominal
  uint64_t version_ = 0;
};

}  // namespace baton::sched::internal
