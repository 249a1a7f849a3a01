#include "common/net.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

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

}  // namespace baton
