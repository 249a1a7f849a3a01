#include "coordinator/scheduler/order.h"

#include <algorithm>
#include <tuple>

namespace baton::sched::internal {
namespace {

// (class, fair share) packed into one integer: class rank (highest value first) in the
// high half, the rank of the tenant's usage / weight in the low half.
struct Key {
  uint64_t primary;
  Time submitted;
  JobId id;
  uint32_t job;

  uint32_t class_rank() const { return static_cast<uint32_t>(primary >> 32); }
  bool operator<(const Key& o) const {
    return std::tie(primary, submitted, id) < std::tie(o.primary, o.submitted, o.id);
  }
};

// Rank of each class by value, highest first; unknown classes rank last.
std::vector<uint32_t> ClassRanks(const Pass& pass) {
  std::vector<uint32_t> by_value(pass.classes.size());
  for (uint32_t c = 0; c < by_value.size(); ++c) by_value[c] = c;
  std::sort(by_value.begin(), by_value.end(), [&](uint32_t a, uint32_t b) {
    return pass.classes[a]->value > pass.classes[b]->value;
  });
  std::vector<uint32_t> rank(pass.classes.size());
  for (uint32_t r = 0; r < by_value.size(); ++r) rank[by_value[r]] = r;
  return rank;
}

// Rank of each tenant's usage / weight, lowest first; equal shares share a rank.
std::vector<uint32_t> ShareRanks(const Pass& pass) {
  std::vector<double> keys = pass.tenant_key;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<uint32_t> rank;
  for (double k : pass.tenant_key) {
    rank.push_back(
        static_cast<uint32_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin()));
  }
  return rank;
}

// Keys in queue order by a stable counting sort on (class, share), when every bucket's
// jobs already come in (submitted, id) order — as the coordinator's queue hands them
// over. False (keys untouched) when they do not.
bool BucketSort(const Pass& pass, const std::vector<Key>& in, std::vector<Key>& out) {
  uint32_t shares = 0;
  for (const Key& k : in) shares = std::max(shares, static_cast<uint32_t>(k.primary) + 1);
  auto bucket = [&](const Key& k) {
    return static_cast<size_t>(k.class_rank() == 0xffffffffu ? pass.classes.size()
                                                             : k.class_rank()) *
               shares +
           static_cast<uint32_t>(k.primary);
  };
  std::vector<uint32_t> count((pass.classes.size() + 1) * shares + 1, 0);
  std::vector<const Key*> last(count.size(), nullptr);
  for (const Key& k : in) {
    size_t b = bucket(k);
    const Key* prev = last[b];
    if (prev && std::tie(k.submitted, k.id) < std::tie(prev->submitted, prev->id)) return false;
    last[b] = &k;
    ++count[b + 1];
  }
  for (size_t b = 1; b < count.size(); ++b) count[b] += count[b - 1];
  out.resize(in.size());
  for (const Key& k : in) out[count[bucket(k)]++] = k;
  return true;
}

// A job borrows when its tenant's use, plus the jobs of that tenant ahead of it that stay
// within nominal, plus itself exceeds the nominal quota. Jobs are in queue order.
void MarkBorrowers(Pass& pass) {
  std::vector<Amount> ahead(pass.tenant_names.size());
  for (Job& job : pass.jobs) {
    const TenantQuota& q = pass.quota.Quota(job.tenant);
    if (job.cls == kNone || job.cooldown_until > pass.now || job.held || !q.has_quota) continue;
    Amount after = pass.quota.Use(job.tenant) + ahead[job.tenant] + Ask(pass, job);
    job.borrower = !(after <= q.nominal);
    if (!job.borrower) ahead[job.tenant] += Ask(pass, job);
  }
}

// Within each class, the jobs that stay within nominal before those that borrow, each
// in the order they had.
void BorrowersLast(Pass& pass) {
  MarkBorrowers(pass);
  std::vector<Job> borrowers;
  for (auto begin = pass.jobs.begin(); begin != pass.jobs.end();) {
    auto end =
        std::find_if(begin, pass.jobs.end(), [&](const Job& j) { return j.cls != begin->cls; });
    borrowers.clear();
    auto out = begin;
    for (auto it = begin; it != end; ++it) {
      if (it->borrower) {
        borrowers.push_back(*it);
      } else {
        *out++ = *it;
      }
    }
    std::copy(borrowers.begin(), borrowers.end(), out);
    begin = end;
  }
}

}  // namespace

void OrderFromSubmission(Pass& pass, const std::vector<Job>& by_submission) {
  std::vector<uint32_t> class_rank = ClassRanks(pass), share_rank = ShareRanks(pass);
  uint32_t shares = 1;
  for (uint32_t r : share_rank) shares = std::max(shares, r + 1);
  auto bucket = [&](const Job& j) {
    size_t c = j.cls == kNone ? pass.classes.size() : class_rank[j.cls];
    return c * shares + share_rank[j.tenant];
  };
  std::vector<size_t> at((pass.classes.size() + 1) * shares + 1, 0);
  for (const Job& j : by_submission) ++at[bucket(j) + 1];
  for (size_t b = 1; b < at.size(); ++b) at[b] += at[b - 1];
  pass.jobs.resize(by_submission.size());
  for (const Job& j : by_submission) pass.jobs[at[bucket(j)]++] = j;
  pass.jobs_ordered = true;
}

void OrderQueue(Pass& pass) {
  if (pass.jobs_ordered) {
    BorrowersLast(pass);
    return;
  }
  std::vector<uint32_t> class_rank = ClassRanks(pass), share_rank = ShareRanks(pass);
  std::vector<Key> keys;
  keys.reserve(pass.jobs.size());
  for (uint32_t i = 0; i < pass.jobs.size(); ++i) {
    const Job& job = pass.jobs[i];
    uint64_t cls = job.cls == kNone ? 0xffffffffu : class_rank[job.cls];
    keys.push_back(Key{cls << 32 | share_rank[job.tenant], job.submitted, job.id, i});
  }
  std::vector<Key> sorted;
  if (BucketSort(pass, keys, sorted)) {
    keys.swap(sorted);
  } else {
    std::sort(keys.begin(), keys.end());
  }
  std::vector<Job> queue;  // gathered once: from here on jobs are read in memory order
  queue.reserve(keys.size());
  for (const Key& k : keys) queue.push_back(pass.jobs[k.job]);
  pass.jobs.swap(queue);
  BorrowersLast(pass);
}

}  // namespace baton::sched::internal
