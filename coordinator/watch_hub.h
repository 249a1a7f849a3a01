// Watchers of jobs (the Watch RPC): each is called with its job as it is when it starts
// watching, then with every durable version of it, on the committer's thread. A watcher
// must only queue, never block or call back in. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "proto/api.pb.h"

namespace baton {

class WatchHub {
 public:
  using Watcher = std::function<void(const v1::Job&)>;

  // Calls `fn` with `current`, then registers it for `current`'s later versions; the
  // caller holds whatever keeps versions from changing in between. Returns a token.
  uint64_t Add(const v1::Job& current, Watcher fn);
  // A job that changes no more (finished): `fn` is called once; the token it returns may
  // be removed like any other.
  uint64_t Once(const v1::Job& job, const Watcher& fn);
  // No call to that watcher runs after this returns.
  void Remove(uint64_t token);
  // Each job's watchers get it.
  void Notify(const std::vector<v1::Job>& changed);
  // Whether the job has a watcher now: a change of a job nobody watches need not be kept
  // for Notify (a copy of the whole job per change, at every submit). A watcher added
  // after this answered got the job as it was then, this change included.
  bool Watches(uint64_t job_id) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;  // held while watchers run: Remove returning means none runs
  uint64_t next_ = 1;
  std::multimap<uint64_t, std::pair<uint64_t, Watcher>> watchers_;  // job id -> (token, fn)
};

}  // namespace baton
