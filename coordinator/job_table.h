// The coordinator's unfinished jobs in memory, with the indexes that follow their states:
// the queue (PENDING jobs in the order they are served), the jobs in COOLDOWN, the jobs
// with a live attempt, and each tenant's count of waiting jobs (PENDING or COOLDOWN: what
// admission.max_pending_per_tenant caps). A state changes only through SetState and an
// attempt only through StartAttempt/EndAttempt, so no index can drift from the jobs.
// Knows nothing of the store, events or the clock. Thread-compatible: the JobManager
// calls it under its lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/attempt_tracker.h"
#include "coordinator/event_list.h"
#include "coordinator/usage/rollup.h"
#include "proto/api.pb.h"

namespace baton {

// A million of these wait in a large queue (issue 51's memory per pending job): what is
// rare (a live attempt) is held by pointer, events are packed, and so are the parts of the
// spec only a launch or a reader of the whole record needs (env and command) while no
// attempt is live. So `job.spec()` has no env and no command then: the whole record is
// JobTable::Whole(entry) (commits, status, listings and watches read that).
// (-class value, submitted_ms, id): the queue's order.
using QueueKey = std::tuple<int32_t, int64_t, uint64_t>;

struct JobEntry {
  v1::Job job;
  std::string packed_spec;  // a JobSpec of the spec's env and command; "" while live
  EventList events;
  std::unique_ptr<LiveAttempt> live;  // set between StartAttempt and EndAttempt
  QueueKey queued_as{};  // while PENDING: its key in the queue when it was queued (JobTable)
  int said_wait = -1;    // the sched::Outcome of the last wait logged; -1 after any event
  usage::Mark charged;   // what of the record the usage rollup has been charged with
};

// PENDING and COOLDOWN jobs wait in the queue (admission counts them).
bool WaitsInQueue(v1::JobState s);

class JobTable {
 public:
  using QueueKey = baton::QueueKey;
  // A job's priority class value (higher is served first), as the policy says now.
  using ClassValue = std::function<int32_t(const std::string& priority_class)>;

  explicit JobTable(ClassValue class_value) : class_value_(std::move(class_value)) {}

  // Adds `job` (a new id) indexed by its state, with no live attempt (its spec packed).
  JobEntry& Add(v1::Job job);
  // Adds every entry of `entries` (new ids, above every id here; jobs with no live attempt,
  // their specs packed as Add packs them, or already: Store::Load's split records), moving the
  // map's nodes in (no copy, no allocation), then calls `fn` on each, in id order. A restart builds
  // the entries on its loading threads and adopts them here.
  void Adopt(std::map<uint64_t, JobEntry> entries, const std::function<void(JobEntry&)>& fn);
  JobEntry* Find(uint64_t id);
  const JobEntry* Find(uint64_t id) const;
  JobEntry& at(uint64_t id);  // the job must be here
  const JobEntry& at(uint64_t id) const;
  // Takes a job out, with its place in every index, whole (nothing packed); it must have no
  // live attempt.
  JobEntry Remove(uint64_t id);

  // Sets the job's state, moving it between the indexes.
  void SetState(JobEntry& e, v1::JobState to);
  // The job holds resources from now on (`a` replaces any attempt before it); its spec is
  // whole while the attempt lives (launches read it).
  void StartAttempt(JobEntry& e, LiveAttempt a);
  // Its attempt has ended: returned, and the job leaves the live set (its spec packed).
  LiveAttempt EndAttempt(JobEntry& e);

  // The job's whole record: its spec with the packed env and command put back.
  static v1::Job Whole(const JobEntry& e);

  // Class values changed (a new policy): the queued jobs are keyed again.
  void Reorder();

  size_t size() const { return jobs_.size(); }
  const std::map<uint64_t, JobEntry>& all() const { return jobs_; }
  const std::set<QueueKey>& queue() const { return queue_; }
  const std::set<uint64_t>& cooldown() const { return cooldown_; }
  const std::set<uint64_t>& live() const { return live_; }
  // The jobs in COOLDOWN whose cooldown is over at `now` (they go back to the queue), by id.
  std::vector<uint64_t> CooledDown(absl::Time now) const;
  // The live jobs whose part on `node` has not ended (launching or running), by id.
  std::vector<uint64_t> LiveOn(const std::string& node) const;
  uint32_t Waiting(const std::string& tenant) const;

 private:
  QueueKey KeyOf(const v1::Job& job) const;
  void Index(JobEntry& e, int sign);  // adds (+1) or takes out (-1) by its state

  ClassValue class_value_;
  std::map<uint64_t, JobEntry> jobs_;
  std::set<QueueKey> queue_;
  std::set<uint64_t> cooldown_;
  std::set<uint64_t> live_;
  std::map<std::string, uint32_t> waiting_;  // tenant -> PENDING + COOLDOWN jobs
};

}  // namespace baton
