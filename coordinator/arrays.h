// Job arrays (`baton submit --array 0-63:2%8`; Slurm's --array): the shape of an array,
// a task's index and job id, its spec with %A/%a substituted, and how many tasks may
// become jobs now. A task is a job of its own (id array+1+position) made when it may
// start; until then the array's one record (v1::JobArray) stands for it. Pure functions;
// thread-safe. The JobManager's side is job_manager_arrays.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton::arrays {

// An array without %max_running makes its tasks jobs in batches, as TCP's slow start
// sends: kFirstBatch, then twice the last batch (at most kMaxBatch) while every task made
// before has started, none while any still waits (the cluster is full for them: the next
// batch starts again at kFirstBatch). An empty cluster fills in a few passes; a full one
// holds a few waiting tasks per array, not thousands of jobs.
inline constexpr uint32_t kFirstBatch = 16;
inline constexpr uint32_t kMaxBatch = 256;

// How many tasks `a` has (after CheckSpec).
uint32_t TaskCount(const v1::ArraySpec& a);
uint32_t Step(const v1::ArraySpec& a);
// The index at `position` (0 .. TaskCount-1), and the position of `index` (nullopt when
// the array has no such index).
uint32_t IndexAt(const v1::ArraySpec& a, uint32_t position);
std::optional<uint32_t> PositionOf(const v1::ArraySpec& a, uint32_t index);

// The array's shape checked, with the field named (InvalidArgument): a reversed range,
// step 0, %0, more tasks than `max_tasks` (admission.max_array_tasks).
absl::Status CheckSpec(const v1::ArraySpec& a, uint32_t max_tasks);

// %A -> the array's id, %a -> the task's index, %% -> %; other text as it is.
std::string Substitute(const std::string& text, uint64_t array_id, uint32_t index);
// A task's own spec: `array` cleared, name/working_dir/checkpoint_dir substituted; an
// empty name stays empty (the default, argv[0], applies).
v1::JobSpec TaskSpec(const v1::JobSpec& array_spec, uint64_t array_id, uint32_t index);

// Job ids: position p of array A is job A+1+p.
inline uint64_t TaskJobId(uint64_t array_id, uint32_t position) { return array_id + 1 + position; }

// How many more tasks become jobs now, given `unfinished` of its tasks that are jobs and
// have not ended, `waiting` of those that wait in the queue and the `last_batch` made
// (0: none yet, or the last waited): up to max_running unfinished, else the next batch
// (kFirstBatch); none once cancelled or all made. `batch` is what to remember as the
// last batch.
struct MakePlan {
  uint32_t make = 0;
  uint32_t batch = 0;
};
MakePlan ToMake(const v1::JobArray& array, uint32_t unfinished, uint32_t waiting,
                uint32_t last_batch);

// The position made next (skipping cancelled ones), nullopt when none is left.
std::optional<uint32_t> NextPosition(const v1::JobArray& array);

// Tasks not yet made jobs and not cancelled before: positions from `made` on, less the
// skipped ones among them (0 once the array is cancelled).
uint32_t Unmade(const v1::JobArray& array);
// Unfinished tasks of `array`: not yet ended, whether jobs or not.
uint32_t TasksLeft(const v1::JobArray& array);
// How an array ended, for the jobs that depend on it: SUCCEEDED when every task did,
// FAILED when any failed, else CANCELLED; PENDING while it has not ended.
v1::JobState EndState(const v1::JobArray& array);

// The array as a job of its tenant and user: what access checks and redaction look at.
v1::Job AsJob(const v1::JobArray& array);

// "17_[0-63:2%8]" as `baton queue` shows it; "17_5" for a task.
std::string Label(const v1::JobArray& array);
std::string TaskLabel(uint64_t array_id, uint32_t index);

}  // namespace baton::arrays
