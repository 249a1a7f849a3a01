#include "coordinator/usage/report.h"

#include <algorithm>
#include <vector>

namespace baton::usage {

void Report::Add(const std::string& tenant, const v1::UsageRecord& rec) {
  if (!Wants(tenant)) return;
  const auto names = static_cast<uint32_t>(rec.names_size());
  // One lookup per distinct key of the record, not per row.
  std::vector<Line*> by_name(names, nullptr);
  Line* tenant_line =
      by_ == v1::USAGE_GROUP_USER || by_ == v1::USAGE_GROUP_CLASS ? nullptr : &lines_[tenant];
  for (const v1::UsageRow& row : rec.rows()) {
    const uint32_t key = by_ == v1::USAGE_GROUP_USER    ? row.user()
                         : by_ == v1::USAGE_GROUP_CLASS ? row.priority_class()
                                                        : 0;
    if (row.user() >= names || row.priority_class() >= names ||
        row.wait_buckets_size() != row.wait_counts_size()) {
      continue;  // damaged: adds nothing (rollup.h)
    }
    Line* l = tenant_line;
    if (l == nullptr) {
      if (by_name[key] == nullptr) by_name[key] = &lines_[rec.names(static_cast<int>(key))];
      l = by_name[key];
    }
    l->gpu_seconds += row.gpu_seconds();
    l->lost_gpu_seconds += row.lost_gpu_seconds();
    l->succeeded += row.succeeded();
    l->failed += row.failed();
    l->cancelled += row.cancelled();
    l->evictions += row.evictions();
    for (int i = 0; i < row.wait_buckets_size(); ++i) {
      l->waits[std::min(row.wait_buckets(i), kBuckets - 1)] += row.wait_counts(i);
    }
  }
}

v1::UsageResponse Report::Finish() const {
  std::vector<const std::pair<const std::string, Line>*> sorted;
  sorted.reserve(lines_.size());
  for (const auto& kv : lines_) sorted.push_back(&kv);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  v1::UsageResponse out;
  for (const auto* kv : sorted) {
    const Line& l = kv->second;
    v1::UsageLine* line = out.add_lines();
    line->set_key(kv->first);
    line->set_gpu_hours(l.gpu_seconds / 3600);
    line->set_lost_gpu_hours(l.lost_gpu_seconds / 3600);
    line->set_succeeded(l.succeeded);
    line->set_failed(l.failed);
    line->set_cancelled(l.cancelled);
    line->set_evictions(l.evictions);
    uint64_t waits = 0;
    for (uint64_t n : l.waits) waits += n;
    line->set_waits(waits);
    line->set_wait_p50_seconds(Percentile(l.waits, 0.50));
    line->set_wait_p95_seconds(Percentile(l.waits, 0.95));
  }
  return out;
}

}  // namespace baton::usage
