#include "coordinator/submit_keys.h"

namespace baton {

absl::Status SubmitKeys::Check(const std::string& key) {
  if (key.size() > 64) {
    return absl::InvalidArgumentError("idempotency_key: longer than 64 characters");
  }
  for (char c : key) {
    if (c < '!' || c > '~') {
      return absl::InvalidArgumentError(
          "idempotency_key: only printable ASCII without spaces is allowed");
    }
  }
  return absl::OkStatus();
}

std::optional<uint64_t> SubmitKeys::Find(const std::string& user, const std::string& key) const {
  if (key.empty()) return std::nullopt;
  auto it = by_key_.find(KeyOf(user, key));
  if (it == by_key_.end()) return std::nullopt;
  return it->second;
}

void SubmitKeys::Add(const std::string& user, const std::string& key, uint64_t job,
                     absl::Time submitted) {
  if (key.empty()) return;
  std::string k = KeyOf(user, key);
  if (by_key_.emplace(k, job).second) order_.emplace_back(submitted, std::move(k));
}

}  // namespace baton
