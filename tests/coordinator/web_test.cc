// The web dashboard's server (issue 48): sessions from one-time login links, from tables
// on a simulated clock; then a real HTTPS server over loopback in front of a real
// JobManager, attacked as a browser on another site, a rebinding DNS name, a stolen or
// replayed link and a forged action would attack it. Each check fails if its defence is
// removed: the Host and Origin checks, the one-time link, the __Host- cookie's
// attributes, the CSRF token, the access rules the CLI has.
#include <google/protobuf/util/json_util.h>
#include <httplib.h>

#include "common/net.h"
#include "coordinator/web/assets.h"
#include "coordinator/web/sessions.h"
#include "coordinator/web/web_server.h"
#include "tests/coordinator/harness.h"
#include "tests/util/subprocess.h"

namespace baton::testing {
namespace {

using web::Sessions;

TEST(WebSessions, ALinkOpensOneFreshSessionOnceWithinItsMinute) {
  Sessions s;
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  auto secret = s.IssueLink(Alice(), t0);
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(secret->size(), 64u);
  auto opened = s.Exchange(*secret, t0 + absl::Seconds(59));
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->session.caller.user, "alice");
  EXPECT_NE(opened->id, *secret) << "a fresh id, not the link's secret";
  EXPECT_EQ(opened->session.csrf.size(), 64u);
  EXPECT_EQ(s.Exchange(*secret, t0 + absl::Seconds(1)).status().code(),
            absl::StatusCode::kUnauthenticated)
      << "used once";

  auto late = s.IssueLink(Alice(), t0);
  EXPECT_EQ(s.Exchange(*late, t0 + absl::Seconds(60)).status().code(),
            absl::StatusCode::kUnauthenticated)
      << "valid 60 s";
  EXPECT_EQ(s.Exchange(*late, t0).status().code(), absl::StatusCode::kUnauthenticated)
      << "and gone once tried";
  EXPECT_EQ(s.Exchange(std::string(64, 'a'), t0).status().code(),
            absl::StatusCode::kUnauthenticated);

  auto again = s.IssueLink(Alice(), t0);
  auto second = s.Exchange(*again, t0);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->id, opened->id) << "each exchange a new session";
  EXPECT_NE(second->session.csrf, opened->session.csrf);
}

TEST(WebSessions, SessionsEndWhenIdleAtTheirAbsoluteLimitOrAtLogout) {
  Sessions s(
      {.link_ttl = absl::Seconds(60), .idle = absl::Minutes(30), .absolute = absl::Hours(12)});
  absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  auto open = [&] { return *s.Exchange(*s.IssueLink(Alice(), t), t); };
  web::Opened a = open();
  EXPECT_TRUE(s.Find(a.id, t + absl::Minutes(29)).ok());
  EXPECT_TRUE(s.Find(a.id, t + absl::Minutes(58)).ok()) << "each use resets the idle clock";
  EXPECT_EQ(s.Find(a.id, t + absl::Minutes(89)).status().code(), absl::StatusCode::kUnauthenticated)
      << "30 minutes unused";
  web::Opened b = open();
  for (int m = 25; m < 12 * 60; m += 25) ASSERT_TRUE(s.Find(b.id, t + absl::Minutes(m)).ok());
  EXPECT_FALSE(s.Find(b.id, t + absl::Hours(12)).ok()) << "12 hours whatever happens";
  web::Opened c = open();
  EXPECT_TRUE(s.End(c.id));
  EXPECT_FALSE(s.Find(c.id, t).ok());
  EXPECT_FALSE(s.End(c.id));
  EXPECT_FALSE(s.Find("", t).ok());
}

TEST(WebSessions, OutstandingLinksAreBounded) {
  Sessions s;
  const absl::Time t = absl::FromUnixSeconds(1'800'000'000);
  for (size_t i = 0; i < Sessions::kMaxLinks + 50; ++i) ASSERT_TRUE(s.IssueLink(Bob(), t).ok());
  EXPECT_EQ(s.links(), Sessions::kMaxLinks);
}

TEST(WebAssets, EveryPageIsBuiltInAndLoadsScriptsOnlyFromFiles) {
  for (const char* path : {"/index.html", "/login.html", "/app.js", "/login.js", "/style.css"}) {
    const web::Asset* a = web::FindAsset(path);
    ASSERT_NE(a, nullptr) << path;
    EXPECT_GT(a->body.size(), 100u) << path;
  }
  for (const char* page : {"/index.html", "/login.html"}) {
    std::string_view html = web::FindAsset(page)->body;
    size_t pos = 0;
    while ((pos = html.find("<script", pos)) != std::string_view::npos) {
      std::string_view tag = html.substr(pos, html.find('>', pos) - pos);
      EXPECT_NE(tag.find(" src=\"/static/"), std::string_view::npos)
          << page << ": no inline script: " << tag;
      ++pos;
    }
  }
  std::string_view app = web::FindAsset("/app.js")->body;
  EXPECT_EQ(app.find("innerHTML"), std::string_view::npos) << "text, never markup";
  EXPECT_EQ(web::FindAsset("/nope.js"), nullptr);
}

// The cluster's CA and a coordinator certificate (localhost, 127.0.0.1), as every test
// cluster makes them: scripts/certs.sh in `dir`.
std::string MakeCerts(const std::string& dir) {
  const std::string certs = std::string(BATON_SOURCE_DIR) + "/scripts/certs.sh";
  for (const char* kind : {"ca", "coordinator"}) {
    CommandResult r = RunProcess({certs, dir, kind}, {});
    if (r.exit_code != 0) return "certs.sh " + std::string(kind) + ": " + r.err;
  }
  return "";
}

class WebServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(MakeCerts(dir_.path()), "");
    auto started = web::WebServer::Start(
        {.listen = "127.0.0.1:0",
         .tls_cert = dir_.path() + "/coordinator.crt",
         .tls_key = dir_.path() + "/coordinator.key"},
        &h_.jm(), &sessions_,
        [](std::string_view token) -> absl::StatusOr<Caller> {
          if (token == "svc-token") return Admin();
          return absl::UnauthenticatedError("unknown token");
        },
        &h_.clock());
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(*started);
    origin_ = "https://" + server_->address();
  }

  std::unique_ptr<httplib::SSLClient> Client() {
    auto [host, port] = *SplitHostPort(server_->address());
    auto c = std::make_unique<httplib::SSLClient>(host, port);
    c->set_ca_cert_path((dir_.path() + "/ca.crt").c_str());
    c->enable_server_certificate_verification(true);
    return c;
  }

  // Exchanges a fresh link for alice (or `who`); returns the cookie header value.
  std::string SignIn(const Caller& who = Alice()) {
    auto secret = sessions_.IssueLink(who, h_.clock().Now());
    auto res = Client()->Post("/api/login", {{"Origin", origin_}},
                              "{\"secret\":\"" + *secret + "\"}", "application/json");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no reply");
    std::string cookie = res ? res->get_header_value("Set-Cookie") : "";
    return cookie.substr(0, cookie.find(';'));
  }

  std::string Csrf(const std::string& cookie) {
    auto res = Client()->Get("/api/v1/whoami", {{"Cookie", cookie}});
    return res ? res->get_header_value("X-CSRF-Token") : "";
  }

  TempDir dir_;
  Harness h_;
  Sessions sessions_;
  std::unique_ptr<web::WebServer> server_;
  std::string origin_;
};

TEST_F(WebServerTest, PagesComeWithAStrictPolicyAndDataOnlyToTheSignedIn) {
  auto page = Client()->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/static/app.js"), std::string::npos);
  const std::string csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(page->get_header_value("Referrer-Policy"), "no-referrer");
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");

  auto data = Client()->Get("/api/v1/jobs");
  ASSERT_TRUE(data);
  EXPECT_EQ(data->status, 401);
  EXPECT_NE(data->body.find("run baton ui"), std::string::npos) << data->body;
  EXPECT_EQ(Client()->Get("/api/v1/jobs", {{"Cookie", "__Host-baton_session=forged"}})->status,
            401);
}

TEST_F(WebServerTest, ANameThisServerDoesNotAnswerToIsRefused) {
  // DNS rebinding: evil.example resolves to us, and the browser sends its own Host.
  auto res = Client()->Get("/api/v1/whoami", {{"Host", "evil.example"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 421);
  EXPECT_EQ(Client()->Get("/", {{"Host", "evil.example:443"}})->status, 421);
}

TEST_F(WebServerTest, ALoginLinkWorksOnceFromOurOwnPageOnlyAndSetsAHostOnlyCookie) {
  auto secret = sessions_.IssueLink(Alice(), h_.clock().Now());
  const std::string body = "{\"secret\":\"" + *secret + "\"}";
  auto cross =
      Client()->Post("/api/login", {{"Origin", "https://evil.example"}}, body, "application/json");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403) << "a login posted from another site";
  EXPECT_EQ(Client()->Post("/api/login", body, "application/json")->status, 403)
      << "no Origin at all";

  auto ok = Client()->Post("/api/login", {{"Origin", origin_}}, body, "application/json");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  const std::string cookie = ok->get_header_value("Set-Cookie");
  EXPECT_EQ(cookie.rfind("__Host-baton_session=", 0), 0u) << cookie;
  for (const char* attr : {"; Path=/", "; Secure", "; HttpOnly", "; SameSite=Strict"}) {
    EXPECT_NE(cookie.find(attr), std::string::npos) << attr << " in " << cookie;
  }
  EXPECT_EQ(cookie.find("Domain"), std::string::npos) << cookie;
  EXPECT_EQ(cookie.find(*secret), std::string::npos) << "a fresh id, not the secret";

  auto replay = Client()->Post("/api/login", {{"Origin", origin_}}, body, "application/json");
  EXPECT_EQ(replay->status, 401) << "used once";
  EXPECT_EQ(server_->LoginLink("abc"), origin_ + "/login#abc");
}

TEST_F(WebServerTest, DataIsTheApisOwnMessagesAuthorizedAsTheCliWouldBe) {
  v1::JobSpec spec = Spec(1, 0, {"sleep", "100"});
  (*spec.mutable_env())["WANDB_API_KEY"] = "hunter2";
  spec.set_tenant("speech");
  auto bobs = h_.Submit(spec, Bob());
  ASSERT_TRUE(bobs.ok()) << bobs.status();
  spec.set_tenant("vision");
  auto alices = h_.Submit(spec, Alice());
  ASSERT_TRUE(alices.ok());

  const std::string cookie = SignIn();
  auto list = Client()->Get("/api/v1/jobs", {{"Cookie", cookie}});
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200) << list->body;
  EXPECT_EQ(list->get_header_value("Content-Type"), "application/json");
  v1::ListResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(list->body, &parsed).ok()) << list->body;
  ASSERT_EQ(parsed.jobs_size(), 2);
  for (const v1::Job& j : parsed.jobs()) {
    if (j.id() == *bobs) {
      EXPECT_NE(j.spec().env().at("WANDB_API_KEY"), "hunter2") << "another tenant's env";
    } else {
      EXPECT_EQ(j.spec().env().at("WANDB_API_KEY"), "hunter2") << "her own";
    }
  }
  auto one = Client()->Get("/api/v1/jobs/" + std::to_string(*alices), {{"Cookie", cookie}});
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(one->body, &job).ok()) << one->body;
  EXPECT_EQ(job.id(), *alices);
  EXPECT_GT(job.events_size(), 0);
  EXPECT_EQ(Client()->Get("/api/v1/jobs/999999", {{"Cookie", cookie}})->status, 404);

  auto nodes = Client()->Get("/api/v1/nodes", {{"Cookie", cookie}});
  EXPECT_EQ(nodes->status, 200);
  auto shares = Client()->Get("/api/v1/shares", {{"Cookie", cookie}});
  EXPECT_EQ(shares->status, 200);

  // A person in no tenant is refused, as by the CLI.
  const std::string mallory = SignIn(Who("mallory"));
  EXPECT_EQ(Client()->Get("/api/v1/jobs", {{"Cookie", mallory}})->status, 403);
}

TEST_F(WebServerTest, ActionsNeedTheSessionsCsrfTokenAndGiveTheCliRefusals) {
  auto bobs = h_.Submit(Spec(1, 0, {"sleep", "100"}), Bob());
  auto alices = h_.Submit(Spec(1, 0, {"sleep", "100"}), Alice());
  ASSERT_TRUE(bobs.ok() && alices.ok());
  const std::string cookie = SignIn();
  const std::string path = "/api/v1/jobs/" + std::to_string(*alices) + "/cancel";

  auto forged = Client()->Post(path, {{"Cookie", cookie}, {"Origin", origin_}}, "", "text/plain");
  EXPECT_EQ(forged->status, 403) << "no CSRF token: " << forged->body;
  auto wrong = Client()->Post(
      path, {{"Cookie", cookie}, {"Origin", origin_}, {"X-CSRF-Token", std::string(64, '0')}}, "",
      "text/plain");
  EXPECT_EQ(wrong->status, 403);
  EXPECT_EQ(h_.State(*alices), v1::JOB_STATE_PENDING) << "nothing done";

  const std::string csrf = Csrf(cookie);
  ASSERT_EQ(csrf.size(), 64u);
  auto done = Client()->Post(
      path, {{"Cookie", cookie}, {"Origin", origin_}, {"X-CSRF-Token", csrf}}, "", "text/plain");
  ASSERT_EQ(done->status, 200) << done->body;
  EXPECT_EQ(h_.State(*alices), v1::JOB_STATE_CANCELLED);

  auto theirs = Client()->Post("/api/v1/jobs/" + std::to_string(*bobs) + "/cancel",
                               {{"Cookie", cookie}, {"Origin", origin_}, {"X-CSRF-Token", csrf}},
                               "", "text/plain");
  EXPECT_EQ(theirs->status, 403);
  absl::StatusOr<v1::JobState> cli = h_.Cancel(*bobs, Alice());
  EXPECT_NE(theirs->body.find(std::string(cli.status().message())), std::string::npos)
      << "the CLI's sentence: " << theirs->body;
  EXPECT_EQ(h_.State(*bobs), v1::JOB_STATE_PENDING);

  // A service token acts without cookie or CSRF (nothing ambient to forge).
  auto svc = Client()->Post("/api/v1/jobs/" + std::to_string(*bobs) + "/cancel",
                            {{"Authorization", "Bearer svc-token"}}, "", "text/plain");
  EXPECT_EQ(svc->status, 200) << svc->body;
  EXPECT_EQ(Client()->Get("/api/v1/jobs", {{"Authorization", "Bearer nope"}})->status, 401);
}

TEST_F(WebServerTest, SessionsExpireAndLogOut) {
  const std::string cookie = SignIn();
  EXPECT_EQ(Client()->Get("/api/v1/whoami", {{"Cookie", cookie}})->status, 200);
  const std::string csrf = Csrf(cookie);
  auto out = Client()->Post("/api/logout",
                            {{"Cookie", cookie}, {"Origin", origin_}, {"X-CSRF-Token", csrf}}, "",
                            "text/plain");
  EXPECT_EQ(out->status, 200);
  EXPECT_NE(out->get_header_value("Set-Cookie").find("Max-Age=0"), std::string::npos);
  EXPECT_EQ(Client()->Get("/api/v1/whoami", {{"Cookie", cookie}})->status, 401);

  const std::string idle = SignIn();
  h_.clock().Advance(absl::Minutes(31));
  auto res = Client()->Get("/api/v1/whoami", {{"Cookie", idle}});
  EXPECT_EQ(res->status, 401);
  EXPECT_NE(res->body.find("expired"), std::string::npos) << res->body;
}

TEST(WebServerStart, PlaintextOnlyOnLoopbackAndTlsInPairs) {
  Harness h;
  Sessions s;
  auto plain = web::WebServer::Start({.listen = "0.0.0.0:0"}, &h.jm(), &s, nullptr, &h.clock());
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("plaintext only on loopback"), std::string::npos);
  auto half = web::WebServer::Start({.listen = "127.0.0.1:0", .tls_cert = "/x.crt"}, &h.jm(), &s,
                                    nullptr, &h.clock());
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument);
  auto missing = web::WebServer::Start(
      {.listen = "127.0.0.1:0", .tls_cert = "/nonexistent.crt", .tls_key = "/nonexistent.key"},
      &h.jm(), &s, nullptr, &h.clock());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
  auto local = web::WebServer::Start({.listen = "127.0.0.1:0"}, &h.jm(), &s, nullptr, &h.clock());
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ((*local)->LoginLink("s").rfind("http://127.0.0.1:", 0), 0u);
}

}  // namespace
}  // namespace baton::testing
