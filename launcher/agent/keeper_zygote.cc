#include "launcher/agent/keeper_zygote.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace baton {
namespace {

// Reads exactly `n` bytes; false at the end of the stream or on an error.
bool ReadAll(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EPIPE;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool SendAll(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

using ControlBuffer = union {
  cmsghdr align;
  char bytes[CMSG_SPACE(sizeof(int) * kZygoteMaxFds)];
};

}  // namespace

[[noreturn]] void ZygoteMain(int sock, void (*run_keeper)(const std::vector<std::string>& args,
                                                          const std::vector<int>& fds)) {
  int32_t ready = 0;
  if (!SendAll(sock, &ready, sizeof ready)) _exit(0);
  for (;;) {
    ZygoteRequest req;
    ControlBuffer control;
    iovec iov{&req, sizeof req};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    ssize_t n;
    do {
      n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) _exit(0);  // the agent is gone
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
    auto size = static_cast<size_t>(n);
    bool whole = size == sizeof req ||
                 ReadAll(sock, reinterpret_cast<char*>(&req) + size, sizeof req - size);
    // Only the agent holds the other end: anything malformed is a bug, not a peer to serve.
    if (!whole || (msg.msg_flags & MSG_CTRUNC) != 0 || req.magic != ZygoteRequest::kMagic ||
        req.payload_bytes > kZygoteMaxPayload || req.fd_count != fds.size()) {
      _exit(2);
    }
    std::string payload(req.payload_bytes, '\0');
    if (!ReadAll(sock, payload.data(), payload.size())) _exit(0);
    if (!payload.empty() && payload.back() != '\0') _exit(2);
    std::vector<std::string> args;
    for (size_t at = 0; at < payload.size();) {
      size_t end = payload.find('\0', at);
      args.emplace_back(payload, at, end - at);
      at = end + 1;
    }
    (void)sched_setaffinity(0, sizeof req.cpus, &req.cpus);
    // A fork whose parent is the agent (CLONE_PARENT): the agent reaps it. Raw clone: the
    // child runs only the keeper, which calls nothing that needs glibc's fork bookkeeping.
    long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, nullptr, nullptr, 0);
    if (pid == 0) {
      close(sock);
      run_keeper(args, fds);
      _exit(127);
    }
    int32_t reply = pid > 0 ? static_cast<int32_t>(pid) : -errno;
    for (int fd : fds) close(fd);
    if (!SendAll(sock, &reply, sizeof reply)) _exit(0);
  }
}

pid_t RequestKeeper(int sock, const std::vector<std::string>& args, const std::vector<int>& fds) {
  std::string payload;
  for (const std::string& a : args) {
    payload += a;
    payload.push_back('\0');
  }
  if (payload.size() > kZygoteMaxPayload || fds.size() > kZygoteMaxFds) {
    errno = E2BIG;
    return -1;
  }
  ZygoteRequest req;
  req.payload_bytes = static_cast<uint32_t>(payload.size());
  req.fd_count = static_cast<uint32_t>(fds.size());
  CPU_ZERO(&req.cpus);
  if (sched_getaffinity(0, sizeof req.cpus, &req.cpus) != 0) return -1;
  ControlBuffer control;
  iovec iov{&req, sizeof req};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.bytes;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  auto sent = static_cast<size_t>(n);
  if (sent < sizeof req &&
      !SendAll(sock, reinterpret_cast<const char*>(&req) + sent, sizeof req - sent)) {
    return -1;
  }
  if (!SendAll(sock, payload.data(), payload.size())) return -1;
  int32_t reply = 0;
  if (!ReadAll(sock, &reply, sizeof reply)) return -1;
  if (reply <= 0) {
    errno = reply < 0 ? -reply : EPROTO;
    return -1;
  }
  return static_cast<pid_t>(reply);
}

}  // namespace baton
