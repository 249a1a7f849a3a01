#include "coordinator/scheduler/quota.h"

#include <algorithm>

namespace baton::sched::internal {
namespace {

uint64_t Cap(uint64_t v) { return std::min(v, kInf); }

}  // namespace

Amount FromResources(const Resources& r) {
  uint64_t gpus = r.gpus == std::numeric_limits<uint32_t>::max() ? kInf : r.gpus * kGpuUnits;
  return {gpus, Cap(r.cpu_millis), Cap(r.memory_bytes)};
}

QuotaBook::QuotaBook(std::vector<TenantQuota> tenants, const Amount& capacity)
    : quota_(std::move(tenants)), use_(quota_.size()) {
  Amount nominal_total;
  for (const auto& q : quota_) {
    if (q.has_quota) nominal_total += q.nominal;
  }
  unassigned_ = Minus(capacity, nominal_total);
  lendable_ = unassigned_;
  for (uint32_t t = 0; t < quota_.size(); ++t) lendable_ += Lends(t, use_[t]);
}

Amount QuotaBook::Lends(uint32_t t, const Amount& use) const {
  const TenantQuota& q = quota_[t];
  if (!q.has_quota) return {};
  return Min(Minus(q.nominal, use), q.lending_limit);
}

Amount QuotaBook::Borrowed(uint32_t t) const {
  return quota_[t].has_quota ? Minus(use_[t], quota_[t].nominal) : Amount{};
}

bool QuotaBook::Borrowing(uint32_t t) const { return !Borrowed(t).IsZero(); }

void QuotaBook::Add(uint32_t t, const Amount& a) {
  ++version_;
  Amount before_lends = Lends(t, use_[t]);
  Amount before_borrow = Borrowed(t);
  use_[t] += a;
  lendable_ = Minus(lendable_, before_lends) + Lends(t, use_[t]);
  borrowed_total_ = Minus(borrowed_total_, before_borrow) + Borrowed(t);
}

QuotaBook::Verdict QuotaBook::Check(uint32_t t, const Amount& ask, bool class_borrows) const {
  const TenantQuota& q = quota_[t];
  Amount after = use_[t] + ask;
  if (!q.has_quota || after <= q.nominal) return Verdict::kWithin;
  if (!class_borrows) return Verdict::kClassNoBorrow;
  if (!(after <= q.nominal + q.borrowing_limit)) return Verdict::kOverBorrowLimit;
  // Borrowing more takes from the lendable pool, and this tenant stops lending.
  Amount borrowed_after = Minus(borrowed_total_, Borrowed(t)) + Minus(after, q.nominal);
  Amount lendable_after = Minus(lendable_, Lends(t, use_[t])) + Lends(t, after);
  return borrowed_after <= lendable_after ? Verdict::kBorrow : Verdict::kNoLendable;
}

}  // namespace baton::sched::internal
