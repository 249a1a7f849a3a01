#include "coordinator/web/web_server.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/net.h"
#include "coordinator/job_manager.h"
#include "coordinator/web/assets.h"

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
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = false;  // proto3 JSON: lowerCamelCase, as the CLI's --json
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(msg, &json, opts); !s.ok()) {
    return Fail(res, absl::InternalError("JSON: " + std::string(s.message())));
  }
  res.status = 200;
  res.set_content(json, "application/json");
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

// A built-in page or file; 404 for none.
void Serve(httplib::Response& res, std::string_view path) {
  const Asset* a = FindAsset(path);
  if (a == nullptr) return Fail(res, absl::NotFoundError("no page " + std::string(path)));
  res.set_content(std::string(a->body), std::string(a->type));
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebServer>> WebServer::Start(WebOptions options, JobManager* jobs,
                                                            Sessions* sessions,
                                                            TokenCheck token_check,
                                                            const Clock* clock) {
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
  std::unique_ptr<WebServer> w(
      new WebServer(std::move(options), jobs, sessions, std::move(token_check), clock));
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

WebServer::WebServer(WebOptions options, JobManager* jobs, Sessions* sessions,
                     TokenCheck token_check, const Clock* clock)
    : options_(std::move(options)),
      jobs_(jobs),
      sessions_(sessions),
      token_check_(std::move(token_check)),
      clock_(clock) {}

WebServer::~WebServer() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
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

  // Who asks: a session cookie (actions also its CSRF token, which `csrf` gets) or a
  // service token; then the cluster's access rule, as every gRPC call.
  auto who = [this](const httplib::Request& req, bool action,
                    std::string* csrf = nullptr) -> absl::StatusOr<Caller> {
    const std::string auth = req.get_header_value("Authorization");
    absl::StatusOr<Caller> caller;
    if (absl::StartsWith(auth, "Bearer ")) {
      caller = token_check_ ? token_check_(std::string_view(auth).substr(7))
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
  };

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
  s.Post("/api/logout", [this, who](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = who(req, /*action=*/true);
    if (!caller.ok()) return Fail(res, caller.status());
    sessions_->End(CookieValue(req.get_header_value("Cookie"), kCookie));
    res.set_header("Set-Cookie", std::string(kCookie) +
                                     "=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0");
    res.set_content("{}", "application/json");
  });

  // Data: the API's messages.
  s.Get("/api/v1/whoami", [this, who](const httplib::Request& req, httplib::Response& res) {
    std::string csrf;
    absl::StatusOr<Caller> caller = who(req, false, &csrf);
    if (!caller.ok()) return Fail(res, caller.status());
    if (!csrf.empty()) res.set_header("X-CSRF-Token", csrf);
    Reply(res, access::Describe(jobs_->policy()->access, *caller));
  });
  s.Get("/api/v1/jobs", [this, who](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    v1::ListRequest list;
    list.set_all(req.get_param_value("all") == "1");
    list.set_tenant(req.get_param_value("tenant"));
    list.set_page_token(req.get_param_value("page_token"));
    uint32_t limit = 500;
    if (req.has_param("limit") && !absl::SimpleAtoi(req.get_param_value("limit"), &limit)) {
      return Fail(res, absl::InvalidArgumentError("limit: not a number"));
    }
    list.set_limit(std::min<uint32_t>(limit, 5000));
    Reply(res, jobs_->List(*caller, list));
  });
  s.Get(R"(/api/v1/jobs/(\d+))", [this, who](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    absl::StatusOr<uint64_t> id = JobId(req);
    if (!id.ok()) return Fail(res, id.status());
    Reply(res, jobs_->Get(*caller, *id));
  });
  s.Get(R"(/api/v1/jobs/(\d+)/explain)",
        [this, who](const httplib::Request& req, httplib::Response& res) {
          absl::StatusOr<Caller> caller = who(req, false);
          if (!caller.ok()) return Fail(res, caller.status());
          absl::StatusOr<uint64_t> id = JobId(req);
          if (!id.ok()) return Fail(res, id.status());
          Reply(res, jobs_->Explain(*id));
        });
  s.Get("/api/v1/nodes", [this, who](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    Reply(res, jobs_->NodeListing());
  });
  s.Get("/api/v1/shares", [this, who](const httplib::Request& req, httplib::Response& res) {
    absl::StatusOr<Caller> caller = who(req, false);
    if (!caller.ok()) return Fail(res, caller.status());
    Reply(res, jobs_->Shares());
  });

  // Actions: the same calls and refusals as the CLI's.
  s.Post(R"(/api/v1/jobs/(\d+)/cancel)",
         [this, who](const httplib::Request& req, httplib::Response& res) {
           absl::StatusOr<Caller> caller = who(req, /*action=*/true);
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
}

}  // namespace baton::web
