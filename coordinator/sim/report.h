// What a simulation run says: per class and tenant the queue wait p50/p95/p99,
// utilisation, GPU-hours lost to evictions, evictions per job, share against weight (in
// all and per day), big-gang starvation and inference placement delay; as one JSON
// summary, as text tables (one run, or two side by side), and as a CSV timeline.
// Waits of jobs that never started count up to the end of the run (a lower bound).
// Used by baton-sim and the tests. Pure functions; thread-safe.
#pragma once

#include <ostream>
#include <string>

#include "coordinator/sim/simulator.h"
#include "nlohmann/json.hpp"

namespace baton::sim {

struct ReportOptions {
  uint32_t big_gang_gpus = 64;  // gangs of at least this many GPUs are "big"
};

nlohmann::json Summarize(const Simulator& sim, const ReportOptions& options = {});

// The summary as tables for a terminal.
std::string SummaryText(const nlohmann::json& summary);
// Two summaries (same trace, two policies) side by side, the headline figures only.
std::string CompareText(const nlohmann::json& a, const std::string& a_name, const nlohmann::json& b,
                        const std::string& b_name);

// time_s, busy_gpus, total_gpus, running, pending, then <tenant>_gpus per tenant.
void WriteTimeline(const Simulator& sim, std::ostream& out);

// The p-quantile (0..1) of `values` by nearest rank; 0 for none.
double Quantile(std::vector<double> values, double p);

}  // namespace baton::sim
