// Idempotent submits: which job a (user, idempotency key) pair made, so that a retried
// submit (a reply lost in a coordinator failover) returns that job instead of making a
// second one. Keys are kept while their job is unfinished and for `keep` after its
// submit (a day by default); rebuilt at recovery from the jobs loaded.
// Owned by the JobManager, under its mutex; not thread-safe on its own.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace baton {

class SubmitKeys {
 public:
  explicit SubmitKeys(absl::Duration keep = absl::Hours(24)) : keep_(keep) {}

  // InvalidArgument for a key over 64 characters or with characters outside [!-~].
  static absl::Status Check(const std::string& key);
  // The job `user` made with `key`, if it is remembered.
  std::optional<uint64_t> Find(const std::string& user, const std::string& key) const;
  // Remembers that `user`'s submit with `key` made `job` at `submitted`.
  void Add(const std::string& user, const std::string& key, uint64_t job, absl::Time submitted);
  // Forgets keys submitted before now - keep whose job is not in `live` (a predicate).
  template <typename LivePred>
  void Expire(absl::Time now, const LivePred& live) {
    while (!order_.empty() && order_.front().first < now - keep_) {
      auto it = by_key_.find(order_.front().second);
      if (it != by_key_.end() && !live(it->second)) by_key_.erase(it);
      order_.pop_front();
    }
  }
  size_t size() const { return by_key_.size(); }

 private:
  static std::string KeyOf(const std::string& user, const std::string& key) {
    return user + '\0' + key;
  }
  absl::Duration keep_;
  std::map<std::string, uint64_t> by_key_;
  std::deque<std::pair<absl::Time, std::string>> order_;  // oldest submit first
};

}  // namespace baton
