// What the agent's worker hands its effects thread: slow work decided under the agent's
// lock and carried out without it (Isolator calls, which wait on the Isolator's lock that
// launches hold while they set up cgroups; output drains; reads of the jobs' files).
// Merged while the effects thread is busy, so that a slow effect never makes the queue
// grow: one note read per attempt (a finishing attempt's wins over a progress read), each
// sweep once, the flags or'ed. Thread-safe.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace baton {

using AttemptKey = std::pair<uint64_t, uint32_t>;  // job, attempt

// A progress note to read outside the lock (the job's file, as `owner`), and for a
// finishing attempt, its output to drain first.
struct NoteRead {
  AttemptKey key;
  std::string path;
  uid_t owner = 0;
  bool finishing = false;
  bool inference = false;  // a finishing inference attempt: training is widened again
};

struct Effects {
  std::map<AttemptKey, NoteRead> reads;
  std::set<AttemptKey> sweeps;  // attempts whose cgroup is swept (Isolator::Kill)
  bool limits_changed = false;  // inference came or went: limits are re-read and reported
  bool refresh_stats = false;
  bool empty() const {
    return reads.empty() && sweeps.empty() && !limits_changed && !refresh_stats;
  }
};

class EffectsQueue {
 public:
  // Adds to what waits, merged (above), and wakes Take while anything waits.
  void Post(std::vector<NoteRead> reads, const std::vector<AttemptKey>& sweeps, bool limits_changed,
            bool refresh_stats);
  // Waits until something waits or Stop, and takes all of it. Empty only once stopped and
  // drained: what was posted before Stop is still handed out.
  Effects Take();
  void Stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Effects pending_;
  bool stopped_ = false;
};

}  // namespace baton
