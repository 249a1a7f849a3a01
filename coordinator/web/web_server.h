// The web dashboard's server (docs/web.md): static pages built into the binary and JSON
// endpoints that answer with the API's own messages in proto3 JSON, served by the
// coordinator on a listener of its own (--web-listen). TLS with the given certificate;
// plaintext only on loopback, as for gRPC. Every request is checked before anything else:
// its Host must be one this server answers to (no DNS rebinding), a POST's Origin must be
// this server (no cross-site requests), and the caller is a signed-in session (the
// `__Host-` cookie a login link's exchange set; actions also carry the session's CSRF
// token) or a service token (Authorization: Bearer). Then it is authorized exactly as the
// CLI's call would be, through the same JobManager calls. Every response carries a strict
// Content-Security-Policy (no inline script, frame-ancestors 'none') and
// Referrer-Policy: no-referrer. Thread-safe; serves on threads of its own until destroyed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "coordinator/access.h"
#include "coordinator/agent_channels.h"
#include "coordinator/stream_quota.h"
#include "coordinator/web/sessions.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace baton {
class JobManager;
}

namespace baton::web {

struct WebOptions {
  std::string listen;              // host:port (port 0: any free one)
  std::string tls_cert, tls_key;   // PEM files; both empty: plaintext, loopback only
  std::vector<std::string> hosts;  // Host values accepted beside the bound address
  std::string public_url;          // the links' base ("https://coord.example:8443");
                                   // "": from the bound address
};

// A service token (the text after "Bearer ") as a Caller; Unauthenticated when it is not
// one.
using TokenCheck = std::function<absl::StatusOr<Caller>(std::string_view token)>;

class ElasticPool;
class EventHub;

// What the server works with; the pointers must outlive it.
struct WebDeps {
  JobManager* jobs = nullptr;
  Sessions* sessions = nullptr;
  TokenCheck token_check;  // empty: service tokens are refused
  const Clock* clock = nullptr;
  // The follow quota the gRPC streams count against too (live views take a place each);
  // null: a quota of the defaults of its own.
  std::shared_ptr<StreamQuota> follows;
  AgentChannels* agents = nullptr;  // for the log tail; null: logs are not served
};

class WebServer {
 public:
  // InvalidArgument for a malformed address, plaintext off loopback, or half a TLS pair;
  // Unavailable when it cannot bind or load the certificate.
  static absl::StatusOr<std::unique_ptr<WebServer>> Start(WebOptions options, WebDeps deps);
  ~WebServer();
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  const std::string& address() const { return address_; }  // host:port bound
  // The page a login link's secret opens: <public url>/login#<secret>.
  std::string LoginLink(const std::string& secret) const;
  // Threads serving connections now (each open live view holds one).
  size_t threads() const;

 private:
  WebServer(WebOptions options, WebDeps deps);
  // Who asks: a session cookie (`action`: and its CSRF token, which `csrf` gets) or a
  // service token; then the cluster's access rule, as for every gRPC call.
  absl::StatusOr<Caller> Who(const httplib::Request& req, bool action,
                             std::string* csrf = nullptr) const;
  void Route();
  void RouteLive();     // server-sent events: the event log and a job's output
  void RouteActions();  // POSTs: cancel, signal, drain

  const WebOptions options_;
  const WebDeps deps_;
  JobManager* const jobs_;
  Sessions* const sessions_;
  const Clock* const clock_;
  std::atomic<bool> stopping_{false};        // live views end at their next step
  std::atomic<ElasticPool*> pool_{nullptr};  // owned by http_ while it serves
  std::unique_ptr<EventHub> hub_;            // the live views' one follower of the log
  bool tls_ = false;
  std::vector<std::string> hosts_;  // accepted Host values
  std::unique_ptr<httplib::Server> http_;
  std::string address_;
  std::string base_url_;
  std::thread thread_;
};

}  // namespace baton::web
