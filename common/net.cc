#include "common/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/status.h"

namespace baton {

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(std::string_view address) {
  auto bad = [&](const char* why) {
    return absl::InvalidArgumentError("invalid address '" + std::string(address) + "': " + why);
  };
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("expected host:port");
  std::string_view host = address.substr(0, colon);
  std::string_view port_text = address.substr(colon + 1);
  if (host.front() == '[') {
    if (host.back() != ']') return bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  }
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad("port must be 0-65535");
  }
  return std::make_pair(std::string(host), port);
}

bool IsLoopback(std::string_view host) {
  if (host == "localhost") return true;
  std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  static const in6_addr loop = IN6ADDR_LOOPBACK_INIT;
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && std::memcmp(&v6, &loop, sizeof v6) == 0;
}

bool IsLoopbackOrPrivate(std::string_view host) {
  if (host == "localhost") return true;
  std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    uint32_t a = ntohl(v4.s_addr);
    return (a >> 24) == 127 || (a >> 24) == 10 || (a >> 20) == ((172u << 4) | 1) ||
           (a >> 16) == ((192u << 8) | 168) || (a >> 16) == ((169u << 8) | 254);
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    static const in6_addr loop = IN6ADDR_LOOPBACK_INIT;
    return std::memcmp(&v6, &loop, sizeof v6) == 0 || (v6.s6_addr[0] & 0xfe) == 0xfc;
  }
  return false;
}

absl::Status CheckListenAddress(std::string_view flag, std::string_view address) {
  auto hp = SplitHostPort(address);
  if (!hp.ok()) {
    return absl::InvalidArgumentError(std::string(flag) + ": " +
                                      std::string(hp.status().message()));
  }
  if (!IsLoopbackOrPrivate(hp->first)) {
    return absl::InvalidArgumentError(
        std::string(flag) + ": '" + std::string(address) +
        "' is not a loopback or private address; this endpoint has no authentication "
        "(metrics), so it listens only on loopback or a private network");
  }
  return absl::OkStatus();
}

absl::Status CheckTcpPortFree(int port) {
  if (port <= 0 || port > 65535) {
    return absl::InvalidArgumentError("port " + std::to_string(port) + " is out of range");
  }
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    int zero = 0;  // dual stack: the IPv4 wildcard too
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  int err = errno;
  close(fd);
  if (rc == 0) return absl::OkStatus();
  if (err == EADDRINUSE) {
    return absl::FailedPreconditionError("port " + std::to_string(port) +
                                         " is already in use on this node");
  }
  return ErrnoToStatus(err, "bind port " + std::to_string(port));
}

}  // namespace baton
