// Job output with rank prefixes. Each rank (or mpirun) writes into a pipe; one thread
// reads every pipe and appends whole lines to the attempt's log as "[rank R] text", so
// lines of different ranks never interleave mid-line and `baton logs --rank R` can pick
// one rank. For mpirun's output (run with --tag-output) the "[1,R]<stdout>:" tags are
// rewritten to the same prefix; its own untagged lines become "[mpirun] text".
// Thread-safe; one per agent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace baton {

class LogPump {
 public:
  enum class Mode { kPrefix, kMpiTags };

  // Each log file holds at most `max_log_bytes` of output: past it one line says the
  // output was truncated and the rest is read from the pipes and dropped (the job never
  // blocks on a full pipe, the disk never fills with one job's output).
  explicit LogPump(uint64_t max_log_bytes = kDefaultMaxLogBytes);
  ~LogPump();
  static constexpr uint64_t kDefaultMaxLogBytes = 1ull << 30;
  LogPump(const LogPump&) = delete;
  LogPump& operator=(const LogPump&) = delete;

  // Opens a pipe whose lines go to `log_path` (appended): prefixed with `prefix` in
  // kPrefix mode, or with the rank of their mpirun tag in kMpiTags mode. Returns the
  // write end; the caller hands it to the child and closes its own copy. `group` names
  // the streams of one attempt for Drain. `reader_copy`: also a duplicate of the read end
  // (close-on-exec, the caller's), for a keeper to hold while the agent restarts.
  absl::StatusOr<int> Open(const std::string& group, const std::string& log_path, Mode mode,
                           const std::string& prefix = "", int* reader_copy = nullptr);
  // Pumps an existing read end (taken over, closed at end of file) the same way: a
  // restarted agent picks up the pipes of the processes it re-adopts.
  absl::Status Adopt(const std::string& group, int read_fd, const std::string& log_path, Mode mode,
                     const std::string& prefix = "");
  // Waits until every stream of `group` reached end of file (all writers gone) and was
  // written out, or the timeout passed. True when drained.
  bool Drain(const std::string& group, std::chrono::milliseconds timeout);

  // "[1,3]<stdout>:text" -> "[rank 3] text"; other lines -> "[mpirun] line". Exposed for
  // tests.
  static std::string RewriteMpiLine(const std::string& line);
  // The rank of a prefixed log line, -1 for lines without one.
  static int RankOf(const std::string& line);

 private:
  struct Stream {
    std::string group;
    int log_fd = -1;
    Mode mode;
    std::string prefix;
    std::string partial;  // bytes after the last newline
  };
  void Run();
  void Emit(Stream& s, const char* data, size_t n, bool eof);

  const uint64_t max_log_bytes_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::mutex mu_;
  std::condition_variable drained_cv_;
  std::map<int, Stream> streams_;          // by read fd
  std::map<std::string, int> open_count_;  // streams per group not yet at EOF
  std::set<std::string> truncated_;        // groups whose log reached the cap
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace baton
