#include "coordinator/usage/report.h"

#include <algorithm>
#include <vector>

namespace baton::usage {

void Report::Add(const std::string& tenant, const v1::UsageRecord& rec) {
  if (!Wants(tenant) || !WellFormed(rec)) return;  // damaged: adds nothing (rollup.h)
  const auto names = static_cast<uint32_t>(rec.names_size());
  Line* tenant_line =
      by_ == v1::USAGE_GROUP_USER || by_ == v1::USAGE_GROUP_CLASS ? nullptr : &lines_[tenant];
  // The line of each name (user or class), looked up once per tenant while its records name
  // the same ones.
  Names& known = names_[tenant];
  bool same = known.names.size() == names;
  for (uint32_t i = 0; same && i < names; ++i) {
    same = known.names[i] == rec.names(static_cast<int>(i));
  }
  if (!same) {
    known.names.assign(rec.names().begin(), rec.names().end());
    known.lines.assign(names, nullptr);
  }
  uint32_t w = 0;
  for (int i = 0; i < rec.user_size(); ++i) {
    Line* l = tenant_line;
    if (l == nullptr) {
      const uint32_t key = by_ == v1::USAGE_GROUP_USER ? rec.user(i) : rec.priority_class(i);
      if (known.lines[key] == nullptr) known.lines[key] = &lines_[known.names[key]];
      l = known.lines[key];
    }
    AddRow(rec, i, w, *l);
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
