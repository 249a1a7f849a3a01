#include "coordinator/web/sessions.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>

#include "absl/strings/escaping.h"

namespace baton::web {

absl::StatusOr<std::string> RandomSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return absl::InternalError("no randomness for a web secret (OpenSSL RAND_bytes failed)");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

std::string Sha256(std::string_view s) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), out, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

namespace {

// The oldest entry of `m` by `when`, dropped to make room.
template <typename M, typename F>
void DropOldest(M& m, F when) {
  auto oldest = std::min_element(m.begin(), m.end(), [&](const auto& a, const auto& b) {
    return when(a.second) < when(b.second);
  });
  if (oldest != m.end()) m.erase(oldest);
}

absl::Status Refused() {
  return absl::UnauthenticatedError(
      "this login link is unknown, used or expired: run baton ui for a new one");
}

}  // namespace

void Sessions::DropExpiredLocked(absl::Time now) {
  std::erase_if(links_, [now](const auto& kv) { return kv.second.expires <= now; });
  std::erase_if(sessions_, [&](const auto& kv) {
    const Session& s = kv.second;
    return now - s.last_used >= options_.idle || now - s.created >= options_.absolute;
  });
}

absl::StatusOr<std::string> Sessions::IssueLink(const Caller& caller, absl::Time now) {
  absl::StatusOr<std::string> secret = RandomSecret();
  if (!secret.ok()) return secret.status();
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(now);
  if (links_.size() >= kMaxLinks) DropOldest(links_, [](const Link& l) { return l.expires; });
  links_[Sha256(*secret)] = Link{caller, now + options_.link_ttl};
  return secret;
}

absl::StatusOr<Opened> Sessions::Exchange(std::string_view secret, absl::Time now) {
  absl::StatusOr<std::string> id = RandomSecret();
  absl::StatusOr<std::string> csrf = RandomSecret();
  if (!id.ok()) return id.status();
  if (!csrf.ok()) return csrf.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find(Sha256(secret));
  if (it == links_.end()) return Refused();
  Link link = std::move(it->second);
  links_.erase(it);  // used once, whatever follows
  if (link.expires <= now) return Refused();
  DropExpiredLocked(now);
  if (sessions_.size() >= kMaxSessions) {
    DropOldest(sessions_, [](const Session& s) { return s.last_used; });
  }
  Session s{std::move(link.caller), *csrf, now, now};
  sessions_[Sha256(*id)] = s;
  return Opened{*id, std::move(s)};
}

absl::StatusOr<Session> Sessions::Find(std::string_view id, absl::Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(Sha256(id));
  if (it == sessions_.end()) {
    return absl::UnauthenticatedError("not signed in: run baton ui for a login link");
  }
  Session& s = it->second;
  if (now - s.last_used >= options_.idle || now - s.created >= options_.absolute) {
    sessions_.erase(it);
    return absl::UnauthenticatedError("the session expired: run baton ui for a new login link");
  }
  s.last_used = now;
  return s;
}

bool Sessions::End(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.erase(Sha256(id)) > 0;
}

size_t Sessions::links() const {
  std::lock_guard<std::mutex> lock(mu_);
  return links_.size();
}

size_t Sessions::sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

}  // namespace baton::web
