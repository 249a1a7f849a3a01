#include "launcher/agent/log_pump.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/resources.h"
#include "common/status.h"

namespace baton {
namespace {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk loses output, never the job
    done += static_cast<size_t>(n);
  }
}

constexpr size_t kMaxLine = 64 * 1024;  // longer lines are cut, the rest continues
constexpr uint64_t kMarkerRoom = 512;   // kept below the log cap for the truncation line

}  // namespace

LogPump::LogPump(uint64_t max_log_bytes) : max_log_bytes_(max_log_bytes) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
}

LogPump::~LogPump() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (auto& [fd, s] : streams_) {
    close(fd);
    close(s.log_fd);
  }
  close(wake_fd_);
  close(epoll_fd_);
}

absl::StatusOr<int> LogPump::Open(const std::string& group, const std::string& log_path, Mode mode,
                                  const std::string& prefix, int* reader_copy) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe for " + log_path);
  if (reader_copy) {
    *reader_copy = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
    if (*reader_copy < 0) {
      int err = errno;
      close(fds[0]);
      close(fds[1]);
      return ErrnoToStatus(err, "dup of the pipe for " + log_path);
    }
  }
  absl::Status added = Adopt(group, fds[0], log_path, mode, prefix);
  if (!added.ok()) {
    close(fds[1]);
    if (reader_copy) close(*reader_copy);
    return added;
  }
  return fds[1];
}

absl::Status LogPump::Adopt(const std::string& group, int read_fd, const std::string& log_path,
                            Mode mode, const std::string& prefix) {
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    int err = errno;
    close(read_fd);
    return ErrnoToStatus(err, "open log " + log_path);
  }
  std::lock_guard<std::mutex> lock(mu_);
  streams_[read_fd] = Stream{group, log_fd, mode, prefix, ""};
  ++open_count_[group];
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = read_fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, read_fd, &ev);
  return absl::OkStatus();
}

bool LogPump::Drain(const std::string& group, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return drained_cv_.wait_for(lock, timeout, [&] {
    auto it = open_count_.find(group);
    return it == open_count_.end() || it->second == 0;
  });
}

std::string LogPump::RewriteMpiLine(const std::string& line) {
  // Open MPI's --tag-output: "[jobid,rank]<stdout>:" or "<stderr>:" before the text.
  size_t comma = line.find(',');
  size_t close = line.find("]<");
  size_t colon = line.find(">:");
  if (line.size() > 1 && line[0] == '[' && comma != std::string::npos &&
      close != std::string::npos && colon != std::string::npos && comma < close && close < colon) {
    std::string rank = line.substr(comma + 1, close - comma - 1);
    bool digits = !rank.empty() && rank.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return "[rank " + rank + "] " + line.substr(colon + 2);
  }
  return "[mpirun] " + line;
}

int LogPump::RankOf(const std::string& line) {
  if (line.rfind("[rank ", 0) != 0) return -1;
  size_t end = line.find(']');
  if (end == std::string::npos) return -1;
  std::string num = line.substr(6, end - 6);
  if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoi(num);
}

void LogPump::Emit(Stream& s, const char* data, size_t n, bool eof) {
  s.partial.append(data, n);
  std::string out;
  size_t start = 0;
  for (;;) {
    size_t nl = s.partial.find('\n', start);
    bool cut = nl == std::string::npos && s.partial.size() - start >= kMaxLine;
    if (nl == std::string::npos && !cut && !(eof && start < s.partial.size())) break;
    size_t end = nl != std::string::npos ? nl : (cut ? start + kMaxLine : s.partial.size());
    std::string line = s.partial.substr(start, end - start);
    out += (s.mode == Mode::kMpiTags ? RewriteMpiLine(line) : s.prefix + line) + "\n";
    start = nl != std::string::npos ? nl + 1 : end;
  }
  s.partial.erase(0, start);
  if (out.empty()) return;
  // The file is shared by the attempt's streams (its group) and survives an agent
  // restart: its size is the count. Crossing the cap writes the lines that fit and the
  // marker, once; past it nothing more (a file found full after a restart counts as cut).
  if (truncated_.count(s.group)) return;
  struct stat st {};
  uint64_t size = fstat(s.log_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  const uint64_t room = max_log_bytes_ > kMarkerRoom ? max_log_bytes_ - kMarkerRoom : 0;
  if (size >= room) {
    truncated_.insert(s.group);
    return;
  }
  if (size + out.size() > room) {
    size_t fits = out.rfind('\n', room - size - 1);  // whole lines only
    out = (fits == std::string::npos ? "" : out.substr(0, fits + 1)) +
          "[baton] output truncated: this attempt's log reached " + FormatBytes(max_log_bytes_) +
          " (the agent's --max-log-bytes); further output is discarded\n";
    truncated_.insert(s.group);
  }
  WriteAll(s.log_fd, out);
}

void LogPump::Run() {
  epoll_event events[32];
  char buf[16384];
  for (;;) {
    int n = epoll_wait(epoll_fd_, events, 32, -1);
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
        continue;
      }
      ssize_t got = read(fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      std::lock_guard<std::mutex> lock(mu_);
      Stream& s = streams_.at(fd);
      Emit(s, buf, got > 0 ? static_cast<size_t>(got) : 0, got <= 0);
      if (got > 0) continue;
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
      close(s.log_fd);
      if (--open_count_[s.group] == 0) {
        open_count_.erase(s.group);
        truncated_.erase(s.group);
      }
      streams_.erase(fd);
      drained_cv_.notify_all();
    }
  }
}

}  // namespace baton
