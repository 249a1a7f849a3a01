// Followed streams (`baton events -f`, `baton logs -f`) each hold memory and a store
// cursor for as long as the client stays: at most `per_user` open per user and `total` in
// all; past either a new one is refused (ResourceExhausted, naming the limit). A Ticket
// holds one place until it is destroyed (with its stream). Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace baton {

class StreamQuota : public std::enable_shared_from_this<StreamQuota> {
 public:
  StreamQuota(size_t per_user, size_t total) : per_user_(per_user), total_(total) {}
  using Ticket = std::shared_ptr<void>;
  // Create with std::make_shared: tickets keep the quota alive.
  absl::StatusOr<Ticket> Acquire(const std::string& user);
  size_t open() const;
  size_t total() const;  // the limit of open streams in all
  // New limits for new streams (a SIGHUP reload); open ones keep their places.
  void SetLimits(size_t per_user, size_t total);

 private:
  void Release(const std::string& user);

  size_t per_user_;  // guarded by mu_
  size_t total_;
  mutable std::mutex mu_;
  std::map<std::string, size_t> by_user_;
  size_t open_ = 0;
};

}  // namespace baton
