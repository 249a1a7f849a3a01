// Reading train_mlp's WITNESS file, the record of when each attempt ran that the launcher
// does not control: every rank appends "start|alive|end attempt A rank R time T" under
// flock ("alive" about once a second while it trains; "superseded" when a newer attempt
// fenced it off). Used by the integration tests and
// the preemption benchmark. Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace baton::testing {

struct WitnessRecord {
  std::string event;  // start, alive, end, superseded
  int attempt = 0;
  int rank = 0;
  int64_t time_ms = 0;
};

inline std::vector<WitnessRecord> WitnessRecords(const std::string& witness) {
  std::vector<WitnessRecord> records;
  std::istringstream in(witness);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    WitnessRecord r;
    std::string w1, w2, w3;
    if (words >> r.event >> w1 >> r.attempt >> w2 >> r.rank >> w3 >> r.time_ms) {
      records.push_back(std::move(r));
    }
  }
  return records;
}

// First and last record of one attempt, unix ms: a rank that was killed leaves no "end",
// but its last "alive" bounds when it last ran.
struct WitnessSpan {
  int64_t first = 0;
  int64_t last = 0;
  int records = 0;
};

inline std::map<int, WitnessSpan> AttemptSpans(const std::string& witness) {
  std::map<int, WitnessSpan> spans;
  for (const WitnessRecord& r : WitnessRecords(witness)) {
    auto [it, fresh] = spans.try_emplace(r.attempt, WitnessSpan{r.time_ms, r.time_ms, 0});
    it->second.first = std::min(it->second.first, r.time_ms);
    it->second.last = std::max(it->second.last, r.time_ms);
    ++it->second.records;
  }
  return spans;
}

// The longest silence of any rank, over all attempts (ms between two consecutive records
// of the same rank): a rank that writes "alive" every second and never stopped stays near
// 1000.
inline int64_t MaxRankGapMs(const std::string& witness) {
  std::map<int, std::vector<int64_t>> times;  // rank -> record times
  for (const WitnessRecord& r : WitnessRecords(witness)) times[r.rank].push_back(r.time_ms);
  int64_t gap = 0;
  for (auto& [rank, ts] : times) {
    std::sort(ts.begin(), ts.end());
    for (size_t i = 1; i < ts.size(); ++i) gap = std::max(gap, ts[i] - ts[i - 1]);
  }
  return gap;
}

// "" when every attempt's first record comes after every record of the attempts before
// it; else which attempts overlapped and by how much.
inline std::string WitnessOverlap(const std::string& witness) {
  auto spans = AttemptSpans(witness);
  int64_t last_end = INT64_MIN;
  int last_attempt = 0;
  for (const auto& [attempt, span] : spans) {
    if (last_attempt != 0 && span.first <= last_end) {
      return "attempt " + std::to_string(attempt) + " started " +
             std::to_string(last_end - span.first) + " ms before attempt " +
             std::to_string(last_attempt) + " (or an earlier one) last ran";
    }
    if (span.last > last_end) {
      last_end = span.last;
      last_attempt = attempt;
    }
  }
  return "";
}

}  // namespace baton::testing
