// Retention on a node: a thread of its own removes the directories of attempts that ended
// `retention` ago (ExpiredAttemptDirs: records, output log, work dir), every `period`,
// outside every lock of the agent's. Attempts the agent still tracks are never removed,
// whatever their age.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace baton {

class AttemptDirJanitor {
 public:
  // The (job, attempt) pairs the agent tracks now.
  using Tracked = std::function<std::set<std::pair<uint64_t, uint32_t>>()>;

  AttemptDirJanitor(std::string data_dir, absl::Duration retention, Tracked tracked,
                    absl::Duration period = absl::Minutes(10));
  ~AttemptDirJanitor();  // Stop
  AttemptDirJanitor(const AttemptDirJanitor&) = delete;
  AttemptDirJanitor& operator=(const AttemptDirJanitor&) = delete;

  // Sweeps now and then every period, until Stop; nothing when retention is zero.
  void Start();
  void Stop();
  // One sweep: the attempt directories removed (a job's directory goes with its last).
  std::vector<std::string> Sweep();

 private:
  const std::string data_dir_;
  const absl::Duration retention_;
  const Tracked tracked_;
  const absl::Duration period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace baton
