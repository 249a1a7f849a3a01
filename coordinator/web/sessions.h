// Who is signed in to the web dashboard (docs/web.md). `baton ui`, a MUNGE-proven call,
// gets a one-time login link: a random secret valid 60 s, kept only as its SHA-256, used
// once. Exchanging it (a POST from the login page, so the secret never sits in a URL the
// server logs or a Referer carries: it travels in the link's #fragment) opens a session:
// a fresh random id (never one the browser brought: no fixation), kept hashed too, with
// the caller it was issued to, a CSRF token for the actions, an idle and an absolute
// expiry. Bounded: at most kMaxLinks links and kMaxSessions sessions live, the oldest
// dropped first. Time is passed in. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/access.h"

namespace baton::web {

struct SessionOptions {
  absl::Duration link_ttl = absl::Seconds(60);
  absl::Duration idle = absl::Minutes(30);    // signed out after this long unused
  absl::Duration absolute = absl::Hours(12);  // and after this long whatever happens
};

struct Session {
  Caller caller;
  std::string csrf;  // sent back in X-CSRF-Token with every action
  absl::Time created, last_used;
};

// What an exchange gives the browser: the session id (its cookie) and the session.
struct Opened {
  std::string id;
  Session session;
};

class Sessions {
 public:
  static constexpr size_t kMaxLinks = 1024;
  static constexpr size_t kMaxSessions = 8192;

  explicit Sessions(SessionOptions options = {}) : options_(options) {}

  const SessionOptions& options() const { return options_; }

  // A new login link's secret for `caller` (64 hex characters). Internal when the system
  // has no randomness.
  absl::StatusOr<std::string> IssueLink(const Caller& caller, absl::Time now);
  // The link's secret for a new session; Unauthenticated for one unknown, used or expired
  // (the same sentence for each: nothing to learn by guessing).
  absl::StatusOr<Opened> Exchange(std::string_view secret, absl::Time now);
  // The session of a cookie's id, its idle clock reset; Unauthenticated when unknown or
  // expired (an expired one is forgotten).
  absl::StatusOr<Session> Find(std::string_view id, absl::Time now);
  // Signs the session out; false when there was none.
  bool End(std::string_view id);

  size_t links() const;
  size_t sessions() const;

 private:
  struct Link {
    Caller caller;
    absl::Time expires;
  };
  void DropExpiredLocked(absl::Time now);

  const SessionOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Link> links_;        // SHA-256 of the secret -> link
  std::map<std::string, Session> sessions_;  // SHA-256 of the id -> session
};

// 32 random bytes as 64 hex characters; Internal without randomness.
absl::StatusOr<std::string> RandomSecret();
// SHA-256 of `s`, raw bytes.
std::string Sha256(std::string_view s);

}  // namespace baton::web
