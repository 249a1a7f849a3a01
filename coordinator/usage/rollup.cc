#include "coordinator/usage/rollup.h"

#include <algorithm>
#include <cmath>

#include "proto/rpc_util.h"

namespace baton::usage {

int64_t DayOf(int64_t ms) { return ms >= 0 ? ms / kDayMs : -((-ms + kDayMs - 1) / kDayMs); }

uint32_t WaitBucket(double seconds) {
  if (!(seconds >= 1)) return 0;  // NaN too
  int exp = 0;
  const double frac = std::frexp(seconds, &exp);  // seconds = frac * 2^exp, frac in [0.5, 1)
  const int e = exp - 1;                          // seconds = (2 * frac) * 2^e
  if (e > 30) return kBuckets - 1;
  const auto sub = static_cast<uint32_t>((2 * frac - 1) * kSubBuckets);
  return std::min<uint32_t>(
      1 + static_cast<uint32_t>(e) * kSubBuckets + std::min(sub, kSubBuckets - 1), kBuckets - 1);
}

double BucketSeconds(uint32_t bucket) {
  if (bucket == 0) return 0.5;
  const uint32_t e = (bucket - 1) / kSubBuckets;
  const uint32_t sub = (bucket - 1) % kSubBuckets;
  return std::ldexp(1.0 + (sub + 0.5) / kSubBuckets, static_cast<int>(e));
}

double Percentile(const std::array<uint64_t, kBuckets>& counts, double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::max(1.0, std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= rank) return BucketSeconds(b);
  }
  return BucketSeconds(kBuckets - 1);
}

uint32_t GpusOf(const v1::Attempt& a) {
  uint32_t n = 0;
  for (const auto& p : a.placement()) n += static_cast<uint32_t>(p.gpu_ids_size());
  return n;
}

double AllocatedGpuSeconds(const v1::Attempt& a) {
  if (a.ended_ms() == 0 || a.scheduled_ms() == 0) return 0;
  return GpusOf(a) * static_cast<double>(std::max<int64_t>(a.ended_ms() - a.scheduled_ms(), 0)) /
         1000.0;
}

double AllocatedGpuSeconds(const v1::Job& job) {
  double s = 0;
  for (const auto& a : job.attempts()) s += AllocatedGpuSeconds(a);
  return s;
}

Mark MarkOf(const v1::Job& job) {
  Mark m;
  while (m.attempts < static_cast<uint32_t>(job.attempts_size()) &&
         job.attempts(static_cast<int>(m.attempts)).ended_ms() != 0) {
    ++m.attempts;
  }
  m.waited = job.attempts_size() > 0;
  m.ended = IsTerminal(job.state());
  return m;
}

void Cell::Add(const Cell& o) {
  gpu_seconds += o.gpu_seconds;
  lost_gpu_seconds += o.lost_gpu_seconds;
  succeeded += o.succeeded;
  failed += o.failed;
  cancelled += o.cancelled;
  evictions += o.evictions;
  for (const auto& [b, n] : o.waits) waits[b] += n;
}

v1::UsageRecord ToRecord(const Cells& cells) {
  v1::UsageRecord rec;
  std::map<std::string, uint32_t> names;
  auto name = [&](const std::string& s) {
    auto [it, added] = names.emplace(s, static_cast<uint32_t>(rec.names_size()));
    if (added) rec.add_names(s);
    return it->second;
  };
  for (const auto& [key, c] : cells) {
    rec.add_user(name(key.first));
    rec.add_priority_class(name(key.second));
    rec.add_gpu_seconds(c.gpu_seconds);
    rec.add_lost_gpu_seconds(c.lost_gpu_seconds);
    rec.add_succeeded(c.succeeded);
    rec.add_failed(c.failed);
    rec.add_cancelled(c.cancelled);
    rec.add_evictions(c.evictions);
    for (const auto& [b, n] : c.waits) {
      rec.add_wait_buckets(b);
      rec.add_wait_counts(n);
    }
    rec.add_wait_end(static_cast<uint32_t>(rec.wait_buckets_size()));
  }
  return rec;
}

bool WellFormed(const v1::UsageRecord& rec) {
  const int rows = rec.user_size();
  if (rec.priority_class_size() != rows || rec.gpu_seconds_size() != rows ||
      rec.lost_gpu_seconds_size() != rows || rec.succeeded_size() != rows ||
      rec.failed_size() != rows || rec.cancelled_size() != rows || rec.evictions_size() != rows ||
      rec.wait_end_size() != rows || rec.wait_buckets_size() != rec.wait_counts_size()) {
    return false;
  }
  const auto names = static_cast<uint32_t>(rec.names_size());
  uint32_t last_end = 0;
  for (int i = 0; i < rows; ++i) {
    if (rec.user(i) >= names || rec.priority_class(i) >= names || rec.wait_end(i) < last_end) {
      return false;
    }
    last_end = rec.wait_end(i);
  }
  return last_end == static_cast<uint32_t>(rec.wait_buckets_size());
}

bool AddRecord(const v1::UsageRecord& rec, Cells& into) {
  if (!WellFormed(rec)) return false;
  uint32_t w = 0;
  for (int i = 0; i < rec.user_size(); ++i) {
    AddRow(rec, i, w,
           into[{rec.names(static_cast<int>(rec.user(i))),
                 rec.names(static_cast<int>(rec.priority_class(i)))}]);
  }
  return true;
}

v1::UsageRecord Merge(const v1::UsageRecord& a, const v1::UsageRecord& b) {
  Cells cells;
  AddRecord(a, cells);
  AddRecord(b, cells);
  return ToRecord(cells);
}

Cell& Rollup::At(int64_t day, const v1::Job& job) {
  return days_[{day, job.spec().tenant()}][{job.user(), job.spec().priority_class()}];
}

Mark Rollup::Charge(const v1::Job& job, Mark from) {
  const Mark to = MarkOf(job);
  for (uint32_t i = from.attempts; i < to.attempts; ++i) {
    const v1::Attempt& a = job.attempts(static_cast<int>(i));
    const uint32_t gpus = GpusOf(a);
    // Allocated GPU-seconds go to the days they were held in: split at UTC midnight.
    if (gpus > 0 && a.scheduled_ms() > 0) {
      for (int64_t t = a.scheduled_ms(); t < a.ended_ms();) {
        const int64_t day = DayOf(t);
        const int64_t until = std::min(a.ended_ms(), (day + 1) * kDayMs);
        At(day, job).gpu_seconds += gpus * static_cast<double>(until - t) / 1000.0;
        t = until;
      }
    }
    if (!a.eviction().empty() || a.lost_gpu_seconds() > 0) {
      Cell& c = At(DayOf(a.ended_ms()), job);
      c.lost_gpu_seconds += a.lost_gpu_seconds();
      if (!a.eviction().empty()) ++c.evictions;
    }
  }
  if (!from.waited && to.waited) {
    const v1::Attempt& first = job.attempts(0);
    const double wait =
        static_cast<double>(std::max<int64_t>(first.scheduled_ms() - job.submitted_ms(), 0)) /
        1000.0;
    ++At(DayOf(first.scheduled_ms()), job).waits[WaitBucket(wait)];
  }
  if (!from.ended && to.ended) {
    Cell& c = At(DayOf(job.finished_ms()), job);
    switch (job.state()) {
      case v1::JOB_STATE_SUCCEEDED:
        ++c.succeeded;
        break;
      case v1::JOB_STATE_FAILED:
        ++c.failed;
        break;
      default:
        ++c.cancelled;
        break;
    }
  }
  Mark out = to;
  // Never charge twice: a mark only moves forward.
  out.attempts = std::max(to.attempts, from.attempts);
  out.waited = to.waited || from.waited;
  out.ended = to.ended || from.ended;
  return out;
}

std::vector<v1::UsageDelta> Rollup::Take() {
  std::vector<v1::UsageDelta> out;
  out.reserve(days_.size());
  for (const auto& [key, cells] : days_) {
    v1::UsageDelta d;
    d.set_day(key.first);
    d.set_tenant(key.second);
    *d.mutable_record() = ToRecord(cells);
    out.push_back(std::move(d));
  }
  days_.clear();
  return out;
}

}  // namespace baton::usage
