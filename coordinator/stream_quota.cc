#include "coordinator/stream_quota.h"

namespace baton {

absl::StatusOr<StreamQuota::Ticket> StreamQuota::Acquire(const std::string& user) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t& mine = by_user_[user];
    if (mine >= per_user_) {
      if (mine == 0) by_user_.erase(user);
      return absl::ResourceExhaustedError(
          user + " already follows " + std::to_string(mine) + " streams, the most one user may (" +
          "--max-follows-per-user); end one (events -f, logs -f) first");
    }
    if (open_ >= total_) {
      if (mine == 0) by_user_.erase(user);
      return absl::ResourceExhaustedError("the coordinator serves " + std::to_string(open_) +
                                          " followed streams, its most (--max-follows); "
                                          "try again later");
    }
    ++mine;
    ++open_;
  }
  std::shared_ptr<StreamQuota> self = shared_from_this();
  return Ticket(static_cast<void*>(this), [self, user](void*) { self->Release(user); });
}

void StreamQuota::Release(const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  --open_;
  if (--by_user_[user] == 0) by_user_.erase(user);
}

size_t StreamQuota::open() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void StreamQuota::SetLimits(size_t per_user, size_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  per_user_ = per_user;
  total_ = total;
}

size_t StreamQuota::total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace baton
