// The workloads baton-bench-isolation runs as jobs (the same binary in another mode):
// a CPU latency probe (fixed-rate requests, each a fixed CPU burst), a hog that tries to
// use every core, a TCP echo server and an RTT probe against it. Each prints one JSON line.
// Single-threaded except the hog's spinning threads.
#pragma once

#include <string>
#include <vector>

namespace baton::bench {

// argv[1] names the mode: --probe, --hog, --echo-server, --rtt-probe. Returns the exit
// code, or -1 when argv names no workload.
int RunWorkload(const std::vector<std::string>& args);

// p50/p99/p999/max of `us`, as {"p50_us":…,"p99_us":…,"p999_us":…,"max_us":…,"n":…}.
std::string LatencyJson(std::vector<double> us);
// The sample at fraction `p` of sorted `us` (index p × n, at most n - 1); 0 when empty.
double Percentile(const std::vector<double>& sorted_us, double p);

}  // namespace baton::bench
