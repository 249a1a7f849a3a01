// Dependencies between jobs (`baton submit --after ok:17,any:18,notok:19`; Slurm's
// --dependency=afterok/afterany/afternotok). A dependent job waits PENDING until each job
// it names has ended the way it asks; once one of them ended otherwise, the dependent can
// never start and ends CANCELLED ("dependency never satisfied"). What each end means is
// decided here, from tables; the JobManager settles dependents in the commit that ends
// the job they wait for (job_manager_dependencies.cc). Pure functions; thread-safe except
// DependentsIndex (the JobManager's, under its lock).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "proto/api.pb.h"

namespace baton::deps {

// At most this many dependencies per job (Slurm has no bound; a pipeline needs a few).
inline constexpr int kMaxDependencies = 64;

enum class Verdict {
  kWaiting,  // the job it names has not ended yet
  kMet,      // it ended as asked
  kNever,    // it ended otherwise: the dependent can never start
};

// What a dependency of `kind` says while the job it names is in `state` (UNSPECIFIED: no
// longer on record, so never met).
Verdict Judge(v1::DependencyKind kind, v1::JobState state);

// The spec's dependencies, checked before anything is looked up: a kind and a job each,
// at most kMaxDependencies (InvalidArgument naming the entry).
absl::Status CheckSpec(const v1::JobSpec& spec);

// May `d` name `target` (found)? Never a service (InvalidArgument: a service does not
// end), whose class `target_is_service` says.
absl::Status CheckTarget(const v1::JobDependency& d, const v1::Job& target, bool target_is_service);

// The indexes of job.spec().after() not yet met, in spec order.
std::vector<int> Unmet(const v1::Job& job);

// Why the job waits, for the queue and explain: "waiting for job 17 to succeed (it is
// RUNNING)", "waiting for every task of array 21 to succeed", with "; and 2 more" when
// more than one is unmet. `state_of` gives the state of a job that has not ended
// (JOB_STATE_UNSPECIFIED when unknown), `is_array` whether an id is an array's.
template <typename StateOf, typename IsArray>
std::string WaitText(const v1::Job& job, const std::vector<int>& unmet, StateOf state_of,
                     IsArray is_array);
std::string WaitText(const v1::JobDependency& d, v1::JobState state, size_t more,
                     bool array = false);

// The event and final message of a dependent that can never start:
// "dependency never satisfied: job 17 FAILED (ok:17)"; `state` UNSPECIFIED: the job is no
// longer on record.
std::string NeverText(const v1::JobDependency& d, v1::JobState state);
// "dependency ok:17 met: job 17 SUCCEEDED".
std::string MetText(const v1::JobDependency& d, v1::JobState state);

// Who waits for whom: a job id -> the jobs with a dependency on it not yet settled. Built
// at submit and recovery; an entry is taken whole once its job ends.
class DependentsIndex {
 public:
  void Add(uint64_t on, uint64_t dependent) { index_[on].push_back(dependent); }
  // The dependents of `on` (each once), removed from the index.
  std::vector<uint64_t> Take(uint64_t on);
  bool Waited(uint64_t on) const { return index_.contains(on); }
  size_t size() const { return index_.size(); }

 private:
  std::unordered_map<uint64_t, std::vector<uint64_t>> index_;
};

template <typename StateOf, typename IsArray>
std::string WaitText(const v1::Job& job, const std::vector<int>& unmet, StateOf state_of,
                     IsArray is_array) {
  if (unmet.empty()) return "";
  const v1::JobDependency& first = job.spec().after(unmet.front());
  const bool array = is_array(first.job());
  return WaitText(first, array ? v1::JOB_STATE_UNSPECIFIED : state_of(first.job()),
                  unmet.size() - 1, array);
}

}  // namespace baton::deps
