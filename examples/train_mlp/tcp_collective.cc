#include "examples/train_mlp/tcp_collective.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/status.h"

namespace baton::examples {
namespace {

constexpr char kMagic[4] = {'B', 'T', 'N', '1'};
constexpr uint64_t kMaxMessage = 1ull << 30;  // a frame longer than this is a broken peer
constexpr int kHelloTimeoutMs = 10'000;       // a connection that says nothing is dropped

struct Hello {
  char magic[4];
  uint32_t rank, channel, world;
};

using Clock = std::chrono::steady_clock;

absl::StatusOr<int> IntFromEnv(const char* name, int fallback, int min) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < min || n > 1'000'000) {
    return absl::InvalidArgumentError(std::string(name) + "='" + v +
                                      "' is not an integer >= " + std::to_string(min));
  }
  return static_cast<int>(n);
}

// Waits until `fd` is readable, for at most `timeout_ms` (-1: forever).
absl::Status WaitReadable(int fd, int timeout_ms, const std::string& what) {
  pollfd p{fd, POLLIN, 0};
  while (true) {
    int rc = poll(&p, 1, timeout_ms);
    if (rc > 0) return absl::OkStatus();
    if (rc == 0)
      return absl::DeadlineExceededError(what + ": nothing within " + std::to_string(timeout_ms) +
                                         " ms");
    if (errno != EINTR) return ErrnoToStatus(errno, what + ": poll");
  }
}

absl::Status ReadFull(int fd, void* buf, size_t n, const std::string& peer) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got == 0) return absl::UnavailableError(peer + " closed the connection");
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "reading from " + peer);
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::Status WriteFull(int fd, const void* buf, size_t n, const std::string& peer) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t put = send(fd, p, n, MSG_NOSIGNAL);  // a closed peer is an error, not SIGPIPE
    if (put < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "writing to " + peer);
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
  return absl::OkStatus();
}

// One frame: the length (8 bytes, host order: every rank runs the same build) and bytes.
void AppendFrame(std::string& out, const std::string& value) {
  uint64_t len = value.size();
  out.append(reinterpret_cast<const char*>(&len), sizeof len);
  out.append(value);
}

absl::StatusOr<std::string> ReadFrame(int fd, const std::string& peer) {
  uint64_t len = 0;
  BATON_RETURN_IF_ERROR(ReadFull(fd, &len, sizeof len, peer));
  if (len > kMaxMessage) {
    return absl::DataLossError(peer + " sent a frame of " + std::to_string(len) + " bytes");
  }
  std::string value(len, '\0');
  BATON_RETURN_IF_ERROR(ReadFull(fd, value.data(), len, peer));
  return value;
}

std::string RankName(int r) { return "rank " + std::to_string(r); }

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // one step waits on each op
}

absl::StatusOr<addrinfo*> Resolve(const DirectEnv& env, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  std::string port = std::to_string(env.master_port);
  int rc = getaddrinfo(passive ? nullptr : env.master_addr.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return absl::UnavailableError("MASTER_ADDR " + env.master_addr + ": " + gai_strerror(rc));
  }
  return res;
}

// Rank 0's listener on every address (as torchrun's store), IPv4 first.
absl::StatusOr<int> Listen(const DirectEnv& env) {
  BATON_ASSIGN_OR_RETURN(addrinfo * res, Resolve(env, /*passive=*/true));
  absl::Status last = absl::UnavailableError("no address to listen on");
  for (int family : {AF_INET, AF_INET6}) {
    for (addrinfo* a = res; a; a = a->ai_next) {
      if (a->ai_family != family) continue;
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
        freeaddrinfo(res);
        return fd;
      }
      last = ErrnoToStatus(errno, "listening on MASTER_PORT " + std::to_string(env.master_port));
      close(fd);
    }
  }
  freeaddrinfo(res);
  return last;
}

class TcpCollective final : public checkpoint::Collective {
 public:
  // `fds`: on rank 0 the connection of every other rank, by rank (index 0 unused); on
  // another rank, one: its connection to rank 0. Owned.
  TcpCollective(int rank, int size, std::vector<int> fds)
      : rank_(rank), size_(size), fds_(std::move(fds)) {}
  ~TcpCollective() override {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool SupportsBackgroundThread() const override { return true; }

  absl::StatusOr<int64_t> AllReduceMax(int64_t value) override {
    std::string mine(reinterpret_cast<const char*>(&value), sizeof value);
    BATON_ASSIGN_OR_RETURN(auto all, AllGather(mine));
    int64_t max = value;
    for (const std::string& v : all) {
      if (v.size() != sizeof max) return absl::DataLossError("AllReduceMax: a short value");
      int64_t x;
      std::memcpy(&x, v.data(), sizeof x);
      max = std::max(max, x);
    }
    return max;
  }

  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& value) override {
    std::vector<std::string> all(size_);
    if (rank_ != 0) {
      std::string frame;
      AppendFrame(frame, value);
      BATON_RETURN_IF_ERROR(WriteFull(fds_[0], frame.data(), frame.size(), RankName(0)));
      for (int r = 0; r < size_; ++r) {
        BATON_ASSIGN_OR_RETURN(all[r], ReadFrame(fds_[0], RankName(0)));
      }
      return all;
    }
    all[0] = value;
    for (int r = 1; r < size_; ++r) {
      BATON_ASSIGN_OR_RETURN(all[r], ReadFrame(fds_[r], RankName(r)));
    }
    std::string frames;
    for (const std::string& v : all) AppendFrame(frames, v);
    for (int r = 1; r < size_; ++r) {
      BATON_RETURN_IF_ERROR(WriteFull(fds_[r], frames.data(), frames.size(), RankName(r)));
    }
    return all;
  }

  absl::StatusOr<std::string> Broadcast(const std::string& value) override {
    if (rank_ != 0) return ReadFrame(fds_[0], RankName(0));
    std::string frame;
    AppendFrame(frame, value);
    for (int r = 1; r < size_; ++r) {
      BATON_RETURN_IF_ERROR(WriteFull(fds_[r], frame.data(), frame.size(), RankName(r)));
    }
    return value;
  }

 private:
  const int rank_;
  const int size_;
  std::vector<int> fds_;
};

}  // namespace

absl::StatusOr<DirectEnv> DirectEnvFromEnvironment() {
  DirectEnv env;
  BATON_ASSIGN_OR_RETURN(env.world, IntFromEnv("WORLD_SIZE", 1, 1));
  BATON_ASSIGN_OR_RETURN(env.rank, IntFromEnv("RANK", 0, 0));
  BATON_ASSIGN_OR_RETURN(env.local_rank, IntFromEnv("LOCAL_RANK", env.rank, 0));
  if (env.rank >= env.world) {
    return absl::InvalidArgumentError("RANK=" + std::to_string(env.rank) +
                                      " is not below WORLD_SIZE=" + std::to_string(env.world));
  }
  if (env.world == 1) return env;
  const char* addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr) return absl::InvalidArgumentError("MASTER_ADDR is not set");
  env.master_addr = addr;
  BATON_ASSIGN_OR_RETURN(env.master_port, IntFromEnv("MASTER_PORT", 0, 1));
  if (env.master_port == 0 || env.master_port > 65535) {
    return absl::InvalidArgumentError("MASTER_PORT is not set to a port");
  }
  return env;
}

absl::StatusOr<std::unique_ptr<TcpRanks>> TcpRanks::Create(const DirectEnv& env,
                                                           int connect_timeout_s) {
  int fd = -1;
  if (env.rank == 0 && env.world > 1) {
    BATON_ASSIGN_OR_RETURN(fd, Listen(env));
  }
  return std::unique_ptr<TcpRanks>(new TcpRanks(env, fd, connect_timeout_s));
}

TcpRanks::~TcpRanks() {
  if (listen_fd_ >= 0) close(listen_fd_);
  for (auto& [channel, by_rank] : early_) {
    for (auto& [rank, fd] : by_rank) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<checkpoint::Collective>> TcpRanks::NewCollective() {
  int channel = next_channel_++;
  std::vector<int> fds;
  if (env_.world == 1) {
    return std::unique_ptr<checkpoint::Collective>(new checkpoint::LocalCollective());
  }
  if (env_.rank == 0) {
    BATON_ASSIGN_OR_RETURN(fds, AcceptChannel(channel));
  } else {
    BATON_ASSIGN_OR_RETURN(int fd, ConnectChannel(channel));
    fds.push_back(fd);
  }
  return std::unique_ptr<checkpoint::Collective>(
      new TcpCollective(env_.rank, env_.world, std::move(fds)));
}

absl::StatusOr<std::vector<int>> TcpRanks::AcceptChannel(int channel) {
  std::map<int, int> got = std::move(early_[channel]);
  early_.erase(channel);
  auto close_all = [&] {
    for (auto& [r, fd] : got) close(fd);
  };
  const auto deadline = Clock::now() + std::chrono::seconds(connect_timeout_s_);
  while (static_cast<int>(got.size()) < env_.world - 1) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    absl::Status ready = WaitReadable(listen_fd_, std::max<int64_t>(left.count(), 0),
                                      "MASTER_PORT " + std::to_string(env_.master_port));
    if (!ready.ok()) {
      close_all();
      return absl::DeadlineExceededError(std::to_string(env_.world - 1 - got.size()) +
                                         " rank(s) did not connect to MASTER_PORT " +
                                         std::to_string(env_.master_port) + " within " +
                                         std::to_string(connect_timeout_s_) + " s");
    }
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello h{};
    absl::Status read = WaitReadable(fd, kHelloTimeoutMs, "a new connection");
    if (read.ok()) read = ReadFull(fd, &h, sizeof h, "a new connection");
    bool ours = read.ok() && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0;
    if (!ours || h.rank == 0 || h.rank >= static_cast<uint32_t>(env_.world) ||
        h.channel < static_cast<uint32_t>(channel) ||
        h.world != static_cast<uint32_t>(env_.world)) {
      close(fd);  // not a rank of this job (or a stale one): ignored
      if (ours && h.world != static_cast<uint32_t>(env_.world)) {
        close_all();
        return absl::FailedPreconditionError("rank " + std::to_string(h.rank) +
                                             " has WORLD_SIZE=" + std::to_string(h.world) +
                                             ", this rank " + std::to_string(env_.world));
      }
      continue;
    }
    SetNoDelay(fd);
    auto& slot = h.channel == static_cast<uint32_t>(channel) ? got : early_[h.channel];
    if (!slot.emplace(h.rank, fd).second) close(fd);  // a duplicate: the first one stays
  }
  std::vector<int> fds(env_.world, -1);
  for (auto& [r, fd] : got) fds[r] = fd;
  return fds;
}

absl::StatusOr<int> TcpRanks::ConnectChannel(int channel) {
  const auto deadline = Clock::now() + std::chrono::seconds(connect_timeout_s_);
  absl::Status last;
  while (Clock::now() < deadline) {
    BATON_ASSIGN_OR_RETURN(addrinfo * res, Resolve(env_, /*passive=*/false));
    for (addrinfo* a = res; a; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        last = ErrnoToStatus(
            errno, "connecting to " + env_.master_addr + ":" + std::to_string(env_.master_port));
        close(fd);
        continue;
      }
      freeaddrinfo(res);
      SetNoDelay(fd);
      Hello h{};
      std::memcpy(h.magic, kMagic, sizeof kMagic);
      h.rank = static_cast<uint32_t>(env_.rank);
      h.channel = static_cast<uint32_t>(channel);
      h.world = static_cast<uint32_t>(env_.world);
      if (auto s = WriteFull(fd, &h, sizeof h, RankName(0)); !s.ok()) {
        close(fd);
        return s;
      }
      return fd;
    }
    freeaddrinfo(res);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // rank 0 not listening yet
  }
  return absl::DeadlineExceededError("rank 0 did not answer within " +
                                     std::to_string(connect_timeout_s_) + " s (" +
                                     std::string(last.message()) + ")");
}

}  // namespace baton::examples
