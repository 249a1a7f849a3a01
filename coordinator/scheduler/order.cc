#include "coordinator/scheduler/order.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace baton::sched::internal {
namespace {

struct Key {
  int64_t neg_class;  // -value: higher classes sort first
  double share;       // decayed usage / weight
  Time submitted;
  JobId id;
  uint32_t job;
  bool borrower;

  bool operator<(const Key& o) const {
    return std::tie(neg_class, share, submitted, id) <
           std::tie(o.neg_class, o.share, o.submitted, o.id);
  }
};

// A job borrows when its tenant's use, plus the jobs of that tenant ahead of it that stay
// within nominal, plus itself exceeds the nominal quota.
void MarkBorrowers(const Pass& pass, std::vector<Key>& keys) {
  std::vector<Amount> ahead(pass.tenant_names.size());
  for (Key& k : keys) {
    const Job& job = pass.jobs[k.job];
    const TenantQuota& q = pass.quota.Quota(job.tenant);
    if (job.cls == kNone || job.src->cooldown_until > pass.now || !q.has_quota) continue;
    Amount after = pass.quota.Use(job.tenant) + ahead[job.tenant] + job.ask;
    k.borrower = !(after <= q.nominal);
    if (!k.borrower) ahead[job.tenant] += job.ask;
  }
}

}  // namespace

std::vector<uint32_t> QueueOrder(const Pass& pass) {
  std::vector<Key> keys;
  keys.reserve(pass.jobs.size());
  for (uint32_t i = 0; i < pass.jobs.size(); ++i) {
    const Job& job = pass.jobs[i];
    int64_t value =
        job.cls == kNone ? std::numeric_limits<int32_t>::min() : pass.classes[job.cls]->value;
    keys.push_back(
        Key{-value, pass.tenant_key[job.tenant], job.src->submitted, job.src->id, i, false});
  }
  std::sort(keys.begin(), keys.end());
  MarkBorrowers(pass, keys);
  for (auto begin = keys.begin(); begin != keys.end();) {
    auto end = std::find_if(begin, keys.end(),
                            [&](const Key& k) { return k.neg_class != begin->neg_class; });
    std::stable_partition(begin, end, [](const Key& k) { return !k.borrower; });
    begin = end;
  }
  std::vector<uint32_t> order;
  order.reserve(keys.size());
  for (const Key& k : keys) order.push_back(k.job);
  return order;
}

}  // namespace baton::sched::internal
