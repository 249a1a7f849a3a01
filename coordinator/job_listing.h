// One page of `baton queue`/`status --all` (v1::ListRequest): its filters, its order and
// its page tokens, across the jobs in memory and the finished ones in the store. The
// order is running work first, then the queue in the order it is served, then finished
// jobs by id (the store's order), so that paging through history reads it in order
// instead of loading it. A page token is the position of the page's last job.
//
// Three steps, so that the caller holds its lock only for the first: Consider each job in
// memory and Take (under the lock), ReadStore (without it), Page.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/access.h"
#include "coordinator/policy.h"
#include "proto/api.pb.h"

namespace baton {

class JobListing {
 public:
  // (group: 0 running work, 1 queued, 2 finished; -class value; submitted_ms; id).
  using Position = std::tuple<int, int64_t, int64_t, uint64_t>;
  // Finished jobs with an id above `after_id`, in id order, until `fn` returns false
  // (Store::ScanFinished).
  using Scan =
      std::function<absl::Status(uint64_t after_id, const std::function<bool(v1::Job)>& fn)>;

  // InvalidArgument for a page token this coordinator did not give. `policy` orders the
  // queue by its classes.
  static absl::StatusOr<JobListing> Start(const v1::ListRequest& req,
                                          std::shared_ptr<const Policy> policy);

  // Whether finished jobs are asked for (else Consider skips them all).
  bool finished_wanted() const { return finished_wanted_; }
  // A job in memory (unfinished, or finished and perhaps not yet stored): a candidate when
  // it matches the filters and comes after the token. It must stay until Take.
  void Consider(const v1::Job& job);
  // Copies the candidates the page can hold (and one more: whether another page follows),
  // each as `copy` makes it (the JobManager's: the whole record of a packed job).
  using Copy = std::function<v1::Job(const v1::Job&)>;
  void Take(const Copy& copy = [](const v1::Job& job) { return job; });
  // Without the caller's lock: the rest of history, a page's worth, from the store (a
  // finished job both in memory and stored is listed once). Nothing when finished jobs
  // are not asked for.
  absl::Status ReadStore(const Scan& scan);
  // The page as `caller` may see it, with the next page's token when another follows.
  v1::ListResponse Page(const Caller& caller);

  static std::string EncodeToken(const Position& p);
  static absl::StatusOr<Position> DecodeToken(const std::string& token);

 private:
  JobListing(const v1::ListRequest& req, std::shared_ptr<const Policy> policy)
      : req_(req), policy_(std::move(policy)) {}
  bool Wanted(const v1::Job& job) const;
  Position PositionOf(const v1::Job& job) const;
  bool PageFull(size_t jobs, size_t bytes) const;

  v1::ListRequest req_;
  std::shared_ptr<const Policy> policy_;
  std::optional<Position> after_;  // the token's position
  std::set<int> states_;           // asked for; empty: by req_.all()
  bool finished_wanted_ = false;
  std::vector<std::pair<Position, const v1::Job*>> memory_;  // Consider's candidates
  std::vector<std::pair<Position, v1::Job>> picked_;
};

}  // namespace baton
