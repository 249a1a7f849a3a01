// Output for people and for scripts: aligned tables, durations, and proto3 JSON (one
// object per line with --json). Pure; thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "proto/api.pb.h"

namespace baton::cli {

// Left-aligned columns separated by two spaces; the first row is the header.
std::string Table(const std::vector<std::vector<std::string>>& rows);
// Proto3 JSON mapping, compact, field names in lowerCamelCase, defaults included.
std::string ToJson(const google::protobuf::Message& msg);
// "12s ago", "3m ago", "-" for 0.
std::string Ago(int64_t unix_ms, int64_t now_ms);
// Human text of one job for `baton status`.
// A spec's dependencies as `status` shows them: "ok:17 (met), any:18".
std::string AfterText(const v1::JobSpec& spec,
                      const google::protobuf::RepeatedField<uint32_t>& met);
std::string DescribeJob(const v1::Job& job, int64_t now_ms);
// Each node's ranks and where they run, one line per node: the agent's applied binding
// (NUMA node, CPUs, memory nodes) when it reported one, else the scheduler's choice.
std::string DescribeRankBindings(const v1::Attempt& attempt);
// An evicted attempt: for whom, the work it lost (GPU-seconds), the step it resumes from,
// and how far its grace was extended while it checkpointed.
std::string DescribeEviction(const v1::Attempt& attempt, const v1::JobSpec& spec);
// One event for `baton events`: "#12  2024-05-03 10:22:01.123  scheduling  job 3  placed:
// attempt 1 placed on n1  (scheduler)". Time in the local zone.
std::string EventLine(const v1::Event& event);
// "cpus 1 (exclusive) quota 1 weight 100, memory 1.2Gi, net ≤700 Mbit/s (1:100)".
std::string DescribeLimits(const v1::IsolationLimits& limits);
// "throttled 12/340 periods (1.2s), cpu 3.4s, peak memory 20Mi, net 1.0Mi".
std::string DescribeThrottling(const v1::IsolationStats& stats);
// The `baton nodes` table of running attempts' limits and throttling ("" when none).
std::string LimitsTable(const std::vector<v1::Node>& nodes);

}  // namespace baton::cli
