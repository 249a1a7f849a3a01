#include "coordinator/web/web_server.h"

#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/job_signal.h"
#include "common/net.h"
#include "coordinator/job_manager.h"
#include "coordinator/web/assets.h"
#include "coordinator/web/elastic_pool.h"
#include "coordinator/web/event_feed.h"
#include "coordinator/web/event_hub.h"
#include "coordinator/web/log_feed.h"
#include "coordinator/web/sse.h"
#include "proto/json.h"

namespace baton::web {
namespace {

constexpr char kCookie[] = "__Host-baton_session";

// script-src 'self': the pages' ES modules only; no inline script or style, no other
// origin, no framing.
constexpr char kCsp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

int HttpStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// An error as JSON, with the same sentence the CLI prints.
void Fail(httplib::Response& res, const absl::Status& s) {
  res.status = HttpStatus(s.code());
  nlohmann::json body = {{"code", absl::StatusCodeToString(s.code())},
                         {"message", std::string(s.message())}};
  res.set_content(body.dump(), "application/json");
}

void Reply(httplib::Response& res, const google::protobuf::Message& msg) {
  res.status = 200;
  res.set_content(ProtoJson(msg), "application/json");  // proto3 JSON, as the CLI's --json
}

template <typename T>
void Reply(httplib::Response& res, const absl::StatusOr<T>& out) {
  if (!out.ok()) return Fail(res, out.status());
  Reply(res, *out);
}

// The value of cookie `name` in a Cookie header ("" when absent).
std::string CookieValue(const std::string& header, absl::string_view name) {
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripLeadingAsciiWhitespace(part);
    if (absl::StartsWith(part, name) && part.size() > name.size() && part[name.size()] == '=') {
      return std::string(part.substr(name.size() + 1));
    }
  }
  return "";
}

absl::StatusOr<uint64_t> JobId(const httplib::Request& req) {
  uint64_t id = 0;
  if (!absl::SimpleAtoi(req.matches[1].str(), &id) || id == 0) {
    return absl::InvalidArgumentError("invalid job id '" + req.matches[1].str() + "'");
  }
  return id;
}

// The secret of a login exchange's body {"secret": "<64 hex>"}: nothing else is read.
absl::StatusOr<std::string> SecretOf(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("secret") || !j["secret"].is_string()) {
    return absl::InvalidArgumentError("the login body is {\"secret\": \"…\"}");
  }
  return j["secret"].get<std::string>();
}

// The count in query parameter `name`: `fallback` when absent; InvalidArgument naming it
// when it is not a number from `lo` to `hi`.
absl::StatusOr<uint32_t> CountParam(const httplib::Request& req, const std::string& name,
                                    uint32_t fallback, uint32_t lo, uint32_t hi) {
  if (!req.has_param(name.c_str())) return fallback;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(req.get_param_value(name.c_str()), &n) || n < lo || n > hi) {
    return absl::InvalidArgumentError(name + ": a number from " + std::to_string(lo) + " to " +
                                      std::to_string(hi));
  }
  return n;
}

// {"KEY": [MESSAGE, …]} in proto3 JSON, for answers that are lists of the API's messages.
template <typename Message>
std::string JsonList(const std::string& key, const std::vector<Message>& messages) {
  std::string out = "{\"" + key + "\":[";
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += ',';
    AppendProtoJson(messages[i], &out);
  }
  return out + "]}";
}

// A signal action's body {"signal": "USR1"|"USR2"}, as `baton signal -s`.
absl::StatusOr<int> SignalOf(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("signal") || !j["signal"].is_string()) {
    return absl::InvalidArgumentError("the signal body is {\"signal\": \"USR1\"} (or USR2)");
  }
  std::optional<int> signal = JobSignalByName(j["signal"].get<std::string>());
  if (!signal) {
    return absl::InvalidArgumentError("signal: USR1 or USR2 (the only signals jobs are sent)");
  }
  return *signal;
}

// A drain action's body {"reason": "…", "evict": false}; both optional.
absl::StatusOr<v1::DrainNodeRequest> DrainOf(const std::string& node, const std::string& body) {
  v1::DrainNodeRequest d;
  d.set_node(node);
  if (body.empty()) return d;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return absl::InvalidArgumentError("the drain body is a JSON object");
  if (j.contains("reason")) {
    if (!j["reason"].is_string()) return absl::InvalidArgumentError("reason: a string");
    d.set_reason(j["reason"].get<std::string>());
  }
  if (j.contains("evict")) {
    if (!j["evict"].is_boolean()) return absl::InvalidArgumentError("evict: true or false");
    d.set_evict(j["evict"].get<bool>());
  }
  return d;
}

// ?job=ID and ?kind=EVICTION (repeatable) of an events request.
absl::StatusOr<LogQuery> EventQueryOf(const httplib::Request& req) {
  LogQuery q;
  if (req.has_param("job") && !absl::SimpleAtoi(req.get_param_value("job"), &q.job_id)) {
    return absl::InvalidArgumentError("job: not a job id");
  }
  for (size_t i = 0; i < req.get_param_value_count("kind"); ++i) {
    v1::EventKind kind;
    const std::string name = absl::AsciiStrToUpper(req.get_param_value("kind", i));
    if (!v1::EventKind_Parse("EVENT_KIND_" + name, &kind) || kind == v1::EVENT_KIND_UNSPECIFIED) {
      return absl::InvalidArgumentError("kind: unknown event kind '" + name + "'");
    }
    q.kinds |= 1u << static_cast<int>(kind);
  }
  return q;
}

// A live view past the follow limits: 503 with Retry-After, as the issue of limits says
// (the page's EventSource tries again on its own).
void Busy(httplib::Response& res, const absl::Status& s) {
  Fail(res, s);
  res.status = 503;
  res.set_header("Retry-After", "10");
}

// A built-in page or file; 404 for none.
void Serve(httplib::Response& res, std::string_view path) {
  const Asset* a = FindAsset(path);
  if (a == nullptr) return Fail(res, absl::NotFoundError("no page " + std::string(path)));
  res.set_content(std::string(a->body), std::string(a->type));
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebServer>> WebServer::Start(WebOptions options, WebDeps deps) {
  auto hp = SplitHostPort(options.listen);
  if (!hp.ok())
    return absl::InvalidArgumentError("--web-listen: " + std::string(hp.status().message()));
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  if (tls && (options.tls_cert.empty() || options.tls_key.empty())) {
    return absl::InvalidArgumentError("--web-tls-cert and --web-tls-key go together");
  }
  if (!tls && !IsLoopback(hp->first)) {
    return absl::InvalidArgumentError("--web-listen " + options.listen +
                                      ": plaintext only on loopback; give --web-tls-cert and "
                                      "--web-tls-key (or the coordinator's certificate)");
  }
  if (!deps.follows) deps.follows = std::make_shared<StreamQuota>(16, 1024);
  std::unique_ptr<WebServer> w(new WebServer(std::move(options), std::move(deps)));
  w->tls_ = tls;
  if (tls) {
    auto ssl = std::make_unique<httplib::SSLServer>(w->options_.tls_cert.c_str(),
                                                    w->options_.tls_key.c_str());
    if (!ssl->is_valid()) {
      return absl::UnavailableError("--web-tls-cert/--web-tls-key: cannot load " +
                                    w->options_.tls_cert + " and its key");
    }
    w->http_ = std::move(ssl);
  } else {
    w->http_ = std::make_unique<httplib::Server>();
  }
  w->hub_ = std::make_unique<EventHub>(&w->jobs_->event_log());
  // Threads on demand: each open live view holds one (docs/web.md).
  const size_t max_threads = w->deps_.follows->total() + 64;
  w->http_->new_task_queue = [raw = w.get(), max_threads] {
    auto* pool = new ElasticPool(4, max_threads);
    raw->pool_ = pool;
    return pool;
  };
  w->Route();
  int port = hp->second == 0 ? w->http_->bind_to_any_port(hp->first)
                             : (w->http_->bind_to_port(hp->first, hp->second) ? hp->second : -1);
  if (port < 0) return absl::UnavailableError("--web-listen: cannot bind " + w->options_.listen);
  const std::string host = absl::StrContains(hp->first, ':') ? "[" + hp->first + "]" : hp->first;
  w->address_ = host + ":" + std::to_string(port);
  w->hosts_ = w->options_.hosts;
  w->hosts_.push_back(w->address_);
  if (IsLoopback(hp->first)) w->hosts_.push_back("localhost:" + std::to_string(port));
  w->base_url_ = !w->options_.public_url.empty()
                     ? w->options_.public_url
                     : std::string(tls ? "https://" : "http://") + w->address_;
  if (!w->options_.public_url.empty()) {
    auto pos = w->options_.public_url.find("://");
    if (pos != std::string::npos) w->hosts_.push_back(w->options_.public_url.substr(pos + 3));
  }
  httplib::Server* http = w->http_.get();
  w->thread_ = std::thread([http] { http->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs: serving before Start returns makes the
  // destructor's stop() always reach it.
  for (int i = 0; i < 2000 && !http->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return w;
}

WebServer::WebServer(WebOptions options, WebDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      jobs_(deps_.jobs),
      sessions_(deps_.sessions),
      clock_(deps_.clock) {}

WebServer::~WebServer() {
  stopping_ = true;  // live views end within a second, so that the pool's threads can join
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
  pool_ = nullptr;
}

size_t WebServer::threads() const {
  ElasticPool* pool = pool_.load();
  return pool == nullptr ? 0 : pool->threads();
}

absl::StatusOr<Caller> WebServer::Who(const httplib::Request& req, bool action,
                                      std::string* csrf) const {
  const std::string auth = req.get_header_value("Authorization");
  absl::StatusOr<Caller> caller;
  if (absl::StartsWith(auth, "Bearer ")) {
    caller = deps_.token_check ? deps_.token_check(std::string_view(auth).substr(7))
                               : absl::UnauthenticatedError("service tokens are not accepted here");
  } else {
    const std::string id = CookieValue(req.get_header_value("Cookie"), kCookie);
    if (id.empty()) {
      return absl::UnauthenticatedError("not signed in: run baton ui for a login link");
    }
    absl::StatusOr<Session> session = sessions_->Find(id, clock_->Now());
    if (!session.ok()) return session.status();
    if (action && req.get_header_value("X-CSRF-Token") != session->csrf) {
      return absl::PermissionDeniedError("missing or wrong X-CSRF-Token");
    }
    if (csrf != nullptr) *csrf = session->csrf;
    caller = std::move(session->caller);
  }
  if (!caller.ok()) return caller;
  if (absl::Status s = access::CheckMayUseCluster(jobs_->policy()->access, *caller); !s.ok()) {
    return s;
  }
  return caller;
}

std::string WebServer::LoginLink(const std::string& secret) const {
  return base_url_ + "/login#" + secret;
}

void WebServer::Route() {
  httplib::Server& s = *http_;
  s.set_payload_max_length(64 << 10);
  // Every response: the headers that keep the pages to themselves.
  s.set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", kCsp);
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("X-Frame-Options", "DENY");
    res.set_header("Cross-Origin-Opener-Policy", "same-origin");
    res.set_header("Cross-Origin-Resource-Policy", "same-origin");
    res.set_header("Cache-Control", "no-store");
    if (tls_) res.set_header("Strict-Transport-Security", "max-age=31536000");
  });
  // Before any route: the Host this server answers to, and a POST from its own pages.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string host = req.get_header_value("Host");
    if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end()) {
      Fail(res, absl::InvalidArgumentError("unknown Host '" + host + "'"));
      res.status = 421;  // Misdirected Request: a name this server does not answer to
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD") {
      const std::string origin = req.get_header_value("Origin");
      const std::string own = std::string(tls_ ? "https://" : "http://") + host;
      const bool bearer = absl::StartsWith(req.get_header_value("Authorization"), "Bearer ");
      if (!bearer && origin != own) {
        Fail(res, absl::PermissionDeniedError("cross-origin request refused (Origin '" + origin +
                                              "', expected '" + own + "')"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Pages: static files built into the binary.
  s.Get("/", [](const httplib::Request&, httplib::Response& res) { Serve(res, "/index.html"); });
  s.Get("/login",
        [](const httplib::Request&, httplib::Response& res) { Serve(res, "/login.html"); });
  s.Get(R"(/static/([a-z0-9_\-]+\.(js|css)))",
        [](const httplib::Request& req, httplib::Response& res) {
          Serve(res, "/" + req.matches[1].str());
        });

  // The login link's exchange: a fresh session id in a __Host- cookie.
  s.Post("/api/login", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<std::string> secret = SecretOf(req.body);
    if (!secret.ok()) return Fail(res, secret.status());
    absl::StatusOr<Opened> opened = sessions_->Exchange(*secret, clock_->Now());
    if (!opened.ok()) {
      spdlog::info("web login from {} refused: {}", req.remote_addr,
                   std::string(opened.status().message()));
      return Fail(res, opened.status());
    }
    spdlog::info("web login of {} from {}", opened->session.caller.user, req.remote_addr);
    res.set_header("Set-Cookie",
                   std::string(kCookie) + "=" + opened->id +
                       "; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=" +
                       std::to_string(absl::ToInt64Seconds(sessions_->options().absolute)));
    res.set_content(nlohmann::json{{"user", opened->session.caller.user}}.dump(),
                    "application/json");
  });
  s.Post("/api/logout", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, /*action=*/true);
    if (!caller.ok()) return Fail(res, caller.status());
    sessions_->End(CookieValue(req.get_header_value("Cookie"), kCookie));
    res.set_header("Set-Cookie", std::string(kCookie) +
                                     "=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0");
    res.set_content("{}", "application/json");
  });

  // Data: the API's messages.
  s.Get("/api/v1/whoami", [this](const httplib::Request& req, httplib::Response& res) {
    std::string csrf;
    absl::StatusOr<Caller> caller = Who(req, false, &csrf);
    if (!caller.ok()) return Fail(res, caller.status());
    if (!csrf.empty()) res.set_header("X-CSRF-Token", csrf);
    Reply(res, access::Describe(jobs_->policy()->access, *caller));
  });
  s.Get("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    v1::ListRequest list;
    list.set_all(req.get_param_value("all") == "1");
    list.set_tenant(req.get_param_value("tenant"));
    list.set_page_token(req.get_param_value("page_token"));
    for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {  // ?state=running&…
      std::string name = "JOB_STATE_" + absl::AsciiStrToUpper(req.get_param_value("state", i));
      v1::JobState state;
      if (!v1::JobState_Parse(name, &state) || state == v1::JOB_STATE_UNSPECIFIED) {
        return Fail(res, absl::InvalidArgumentError(
                             "state: \"" + req.get_param_value("state", i) +
                             "\" is not a job state (pending, running, succeeded, ...)"));
      }
      list.add_states(state);
    }
    absl::StatusOr<uint32_t> limit = CountParam(req, "limit", 500, 0, UINT32_MAX);
    if (!limit.ok()) return Fail(res, limit.status());
    list.set_limit(std::min<uint32_t>(*limit, 5000));
    Reply(res, jobs_->List(*caller, list));
  });
  s.Get(R"(/api/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    absl::StatusOr<uint64_t> id = JobId(req);
    if (!id.ok()) return Fail(res, id.status());
    Reply(res, jobs_->Get(*caller, *id));
  });
  s.Get(R"(/api/v1/jobs/(\d+)/explain)",
        [this](const httplib::Request& req, httplib::Response& res) {
          absl::StatusOr<Caller> caller = Who(req, false);
          if (!caller.ok()) return Fail(res, caller.status());
          absl::StatusOr<uint64_t> id = JobId(req);
          if (!id.ok()) return Fail(res, id.status());
          Reply(res, jobs_->Explain(*id));
        });
  s.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    Reply(res, jobs_->NodeListing());
  });
  s.Get("/api/v1/shares", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    Reply(res, jobs_->Shares());
  });

  RouteLive();
  RouteActions();
}

void WebServer::RouteActions() {
  httplib::Server& s = *http_;
  s.Post(R"(/api/v1/jobs/(\d+)/cancel)",
         [this](const httplib::Request& req, httplib::Response& res) {
           absl::StatusOr<Caller> caller = Who(req, /*action=*/true);
           if (!caller.ok()) return Fail(res, caller.status());
           absl::StatusOr<uint64_t> id = JobId(req);
           if (!id.ok()) return Fail(res, id.status());
           std::promise<absl::StatusOr<v1::JobState>> p;
           jobs_->Cancel(*caller, *id, "from the web dashboard",
                         [&p](absl::StatusOr<v1::JobState> s) { p.set_value(std::move(s)); });
           absl::StatusOr<v1::JobState> state = p.get_future().get();
           if (!state.ok()) return Fail(res, state.status());
           v1::CancelResponse out;
           out.set_state(*state);
           Reply(res, out);
         });
  s.Post(R"(/api/v1/jobs/(\d+)/signal)",
         [this](const httplib::Request& req, httplib::Response& res) {
           absl::StatusOr<Caller> caller = Who(req, /*action=*/true);
           if (!caller.ok()) return Fail(res, caller.status());
           absl::StatusOr<uint64_t> id = JobId(req);
           if (!id.ok()) return Fail(res, id.status());
           absl::StatusOr<int> signal = SignalOf(req.body);
           if (!signal.ok()) return Fail(res, signal.status());
           Reply(res, jobs_->Signal(*caller, *id, *signal));
         });
  // Nodes: admins only, as `baton drain` ("drain nodes").
  auto node_action = [this](const httplib::Request& req, httplib::Response& res, bool drain) {
    absl::StatusOr<Caller> caller = Who(req, /*action=*/true);
    if (!caller.ok()) return Fail(res, caller.status());
    if (absl::Status s = access::CheckAdmin(jobs_->policy()->access, *caller, "drain nodes");
        !s.ok()) {
      return Fail(res, s);
    }
    const std::string node = req.matches[1].str();
    std::promise<absl::StatusOr<v1::Node>> p;
    auto done = [&p](absl::StatusOr<v1::Node> n) { p.set_value(std::move(n)); };
    if (drain) {
      absl::StatusOr<v1::DrainNodeRequest> d = DrainOf(node, req.body);
      if (!d.ok()) return Fail(res, d.status());
      jobs_->DrainNode(*caller, *d, done);
    } else {
      jobs_->UndrainNode(*caller, node, done);
    }
    Reply(res, p.get_future().get());
  };
  s.Post(R"(/api/v1/nodes/([A-Za-z0-9._-]+)/drain)",
         [node_action](const httplib::Request& req, httplib::Response& res) {
           node_action(req, res, true);
         });
  s.Post(R"(/api/v1/nodes/([A-Za-z0-9._-]+)/undrain)",
         [node_action](const httplib::Request& req, httplib::Response& res) {
           node_action(req, res, false);
         });
}

void WebServer::RouteLive() {
  httplib::Server& s = *http_;
  // The newest records of the event log (the overview's recent evictions): {"events": […]}.
  s.Get("/api/v1/events", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    absl::StatusOr<LogQuery> q = EventQueryOf(req);
    if (!q.ok()) return Fail(res, q.status());
    absl::StatusOr<uint32_t> tail = CountParam(req, "tail", 50, 1, 1000);
    if (!tail.ok()) return Fail(res, tail.status());
    absl::StatusOr<uint64_t> start = jobs_->event_log().TailStart(*q, *tail);
    if (!start.ok()) return Fail(res, start.status());
    q->after_seq = *start;
    q->limit = *tail;
    absl::StatusOr<std::vector<v1::Event>> events = jobs_->event_log().Read(*q);
    if (!events.ok()) return Fail(res, events.status());
    res.set_content(JsonList("events", *events), "application/json");
  });
  // Live: the event log followed, from Last-Event-ID (or ?after=) or the newest ?tail=.
  s.Get("/api/v1/events/stream", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    absl::StatusOr<LogQuery> q = EventQueryOf(req);
    if (!q.ok()) return Fail(res, q.status());
    if (!SseResumeFrom(req, &q->after_seq)) {
      return Fail(res, absl::InvalidArgumentError("Last-Event-ID: not an event number"));
    }
    absl::StatusOr<uint32_t> tail = CountParam(req, "tail", 0, 0, 1000);
    if (!tail.ok()) return Fail(res, tail.status());
    if (q->after_seq == 0) {  // a first connection: the newest `tail` records, then live
      absl::StatusOr<uint64_t> start = jobs_->event_log().TailStart(*q, *tail);
      if (!start.ok()) return Fail(res, start.status());
      q->after_seq = *tail == 0 ? jobs_->event_log().durable_seq() : *start;
    }
    absl::StatusOr<StreamQuota::Ticket> ticket = deps_.follows->Acquire(caller->user);
    if (!ticket.ok()) return Busy(res, ticket.status());
    ServeEventFeed(&jobs_->event_log(), hub_.get(), *q, std::move(*ticket), &stopping_, res);
  });
  // Live: a job's output (its current attempt, or ?attempt=), the last ?tail= bytes first
  // (64 KiB by default) or from Last-Event-ID; followed while the attempt runs.
  s.Get(R"(/api/v1/jobs/(\d+)/log/stream)",
        [this](const httplib::Request& req, httplib::Response& res) {
          absl::StatusOr<Caller> caller = Who(req, false);
          if (!caller.ok()) return Fail(res, caller.status());
          absl::StatusOr<uint64_t> id = JobId(req);
          if (!id.ok()) return Fail(res, id.status());
          if (deps_.agents == nullptr) {
            return Fail(res, absl::UnavailableError("this server does not relay logs"));
          }
          absl::StatusOr<uint32_t> attempt = CountParam(req, "attempt", 0, 0, UINT32_MAX);
          if (!attempt.ok()) return Fail(res, attempt.status());
          absl::StatusOr<uint32_t> tail = CountParam(req, "tail", 64 << 10, 1, 16u << 20);
          if (!tail.ok()) return Fail(res, tail.status());
          uint64_t resume = 0;
          if (!SseResumeFrom(req, &resume)) {
            return Fail(res, absl::InvalidArgumentError("Last-Event-ID: not a byte offset"));
          }
          v1::LogsRequest logs;
          logs.set_job_id(*id);
          logs.set_attempt(*attempt);
          absl::StatusOr<LogTarget> target = jobs_->FindLogs(*caller, logs);
          if (!target.ok()) return Fail(res, target.status());
          v1::ReadLogsRequest read;
          read.set_job_id(*id);
          read.set_attempt(target->attempt);
          read.set_offset(resume > 0 ? static_cast<int64_t>(resume) : -static_cast<int64_t>(*tail));
          read.set_follow(target->running);  // followed while that attempt runs
          StreamQuota::Ticket ticket;
          if (target->running) {
            absl::StatusOr<StreamQuota::Ticket> place = deps_.follows->Acquire(caller->user);
            if (!place.ok()) return Busy(res, place.status());
            ticket = std::move(*place);
          }
          absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
              deps_.agents->Get(target->node, target->address);
          if (!channel.ok()) return Fail(res, channel.status());
          ServeLogFeed(*channel, std::move(read), std::move(ticket), &stopping_, res);
        });
  // GPU-hours per day from the usage rollup, the last ?days= (30) whole UTC days and today:
  // {"days": [UsageResponse, …]} oldest first, each day's lines by ?by= (tenant).
  s.Get("/api/v1/usage/daily", [this](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = Who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    absl::StatusOr<uint32_t> days = CountParam(req, "days", 30, 1, 400);
    if (!days.ok()) return Fail(res, days.status());
    v1::UsageRequest base;
    base.set_tenant(req.get_param_value("tenant"));
    const std::string by = req.has_param("by") ? req.get_param_value("by") : "tenant";
    v1::UsageGroup group;
    if (!v1::UsageGroup_Parse("USAGE_GROUP_" + absl::AsciiStrToUpper(by), &group)) {
      return Fail(res, absl::InvalidArgumentError("by: tenant, user or class"));
    }
    base.set_by(group);
    const absl::Time today =
        absl::FromUnixSeconds(absl::ToUnixSeconds(clock_->Now()) / 86400 * 86400);  // UTC midnight
    std::vector<v1::UsageResponse> per_day;
    for (uint32_t d = *days + 1; d-- > 0;) {
      v1::UsageRequest one = base;
      const absl::Time since = today - absl::Hours(24) * static_cast<int64_t>(d);
      one.set_since_ms(absl::ToUnixMillis(since));
      one.set_until_ms(absl::ToUnixMillis(since + absl::Hours(24)));
      absl::StatusOr<v1::UsageResponse> usage = jobs_->Usage(*caller, one);
      if (!usage.ok()) return Fail(res, usage.status());
      per_day.push_back(std::move(*usage));
    }
    res.set_content(JsonList("days", per_day), "application/json");
  });
}

}  // namespace baton::web
