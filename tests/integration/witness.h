// Reading train_mlp's WITNESS file, the record of when each attempt ran that the launcher
// does not control: every rank appends "start|alive|end attempt A rank R time T" under
// flock ("alive" about once a second while it trains). Used by the integration tests and
// the preemption benchmark. Pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>

namespace baton::testing {

// First and last record of one attempt, unix ms: a rank that was killed leaves no "end",
// but its last "alive" bounds when it last ran.
struct WitnessSpan {
  int64_t first = 0;
  int64_t last = 0;
  int records = 0;
};

inline std::map<int, WitnessSpan> AttemptSpans(const std::string& witness) {
  std::map<int, WitnessSpan> spans;
  std::istringstream in(witness);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string event, w1, w2, w3;
    int attempt = 0, rank = 0;
    int64_t t = 0;
    if (!(words >> event >> w1 >> attempt >> w2 >> rank >> w3 >> t)) continue;
    auto [it, fresh] = spans.try_emplace(attempt, WitnessSpan{t, t, 0});
    it->second.first = std::min(it->second.first, t);
    it->second.last = std::max(it->second.last, t);
    ++it->second.records;
  }
  return spans;
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
