// The CLI's listings as pure functions of what the coordinator returned: the columns of
// `baton queue`, `nodes`, `share` and `admin token list` (default and -o wide), their
// objects and names, and the single-object outputs of `status` and `events`. `now_ms` is
// passed in so that the output under test never reads the clock. The objects are borrowed
// from the arguments, which must outlive the Listing. Pure; thread-safe.
#pragma once

#include <google/protobuf/repeated_ptr_field.h>

#include <string>
#include <vector>

#include "launcher/cli/output.h"
#include "proto/api.pb.h"

namespace baton::cli {

template <typename T>
using Repeated = google::protobuf::RepeatedPtrField<T>;

// Jobs as `baton queue` lists them; named job/<id>. Wide adds GPUS/NODE, ATTEMPTS,
// FAILURES (of max_restarts when set), EVICTIONS, RUNTIME (of the last attempt) and
// PLACEMENT (its nodes, while it runs or after the job ended), and shows NAME and REASON
// whole.
// Tasks of arrays in `arrays` fold into one row per array, named array/<id>, with its
// tasks' counts by state (where its first listed task was, else after the jobs), unless
// `expand_arrays`: then each task has its own row, ID 17_5.
Listing QueueListing(const Repeated<v1::Job>& jobs, int64_t now_ms,
                     const Repeated<v1::JobArray>& arrays = {}, bool expand_arrays = false);
// "2 running, 6 pending, 8 succeeded": an array's tasks by state, running work first.
std::string ArrayCounts(const v1::JobArray& array);
// `baton status ARRAY`.
std::string RenderArray(const v1::JobArray& array, int64_t now_ms, const OutputOptions& options);

// Nodes as `baton nodes` lists them, with the limits table of running attempts as the
// footer; named node/<name>. Wide adds GPU MODEL ("8x NVIDIA H200"), TOPOLOGY (its path in
// the switch tree, top level first: "spine-1/leaf-3"), LABELS, TAINTS and LAST SEEN.
// `topology_levels`: ListNodesResponse.topology_levels ("name=label", lowest first).
Listing NodesListing(const Repeated<v1::Node>& nodes, int64_t now_ms,
                     const std::vector<std::string>& topology_levels = {});

// Tenants' fair-share standing as `baton share` lists it, with the decay note as the
// footer; named tenant/<name>. Wide adds GPU-H/WEIGHT (the scheduler's key inside a
// class), ORDER (its rank, 1 first, equal keys share one) and HALF-LIFE.
Listing SharesListing(const v1::SharesResponse& shares);

// Service tokens as `baton admin token list` lists them; named token/<id>. Wide adds
// STATE (active, expired, revoked).
Listing TokensListing(const Repeated<v1::TokenInfo>& tokens, int64_t now_ms);

// `baton usage`: one row per tenant, user or class (as `by`), with the days covered and the
// tenants read as the footer; named tenant/<t>, user/<u> or class/<c>. GPU-hours as
// allocated and lost to evictions, jobs ended by how, evictions, jobs first placed and
// their queue wait p50/p95.
Listing UsageListing(const v1::UsageResponse& usage, v1::UsageGroup by);

// `baton history`: finished jobs, newest end first; named job/<id>. START is the first
// attempt's start, END the job's end, NODES its last attempt's, GPU-H every attempt's
// allocation (usage::AllocatedGpuSeconds). Wide adds CLASS, ATTEMPTS, EVICTIONS and the
// final MESSAGE whole.
Listing HistoryListing(const Repeated<v1::Job>& jobs);

// "2024-05-03 10:22" (UTC), "-" for 0.
std::string Date(int64_t unix_ms);

// `baton status` for one job: DescribeJob by default and with -o wide; job/<id> for name.
std::string RenderJob(const v1::Job& job, int64_t now_ms, const OutputOptions& options);

// `baton explain` for job `id`: the coordinator's text by default and with -o wide.
std::string RenderExplanation(uint64_t id, const v1::ExplainResponse& explanation,
                              const OutputOptions& options);

// `baton events` for one event: EventLine by default; -o wide appends what the line leaves
// out ("[attempt 2, tenant vision, class research, node state ready]"); named
// event/<log_seq>.
std::string RenderEvent(const v1::Event& event, const OutputOptions& options);

}  // namespace baton::cli
