// The web dashboard's server (issue 48): sessions from one-time login links, from tables
// on a simulated clock; then a real HTTPS server over loopback in front of a real
// JobManager, attacked as a browser on another site, a rebinding DNS name, a stolen or
// replayed link and a forged action would attack it. Each check fails if its defence is
// removed: the Host and Origin checks, the one-time link, the __Host- cookie's
// attributes, the CSRF token, the access rules the CLI has.
#include <google/protobuf/util/json_util.h>
#include <httplib.h>
#include <unistd.h>

#include <future>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "common/net.h"
#include "coordinator/web/assets.h"
#include "coordinator/web/elastic_pool.h"
#include "coordinator/web/sessions.h"
#include "coordinator/web/sse.h"
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
    auto started =
        web::WebServer::Start({.listen = "127.0.0.1:0",
                               .tls_cert = dir_.path() + "/coordinator.crt",
                               .tls_key = dir_.path() + "/coordinator.key"},
                              {.jobs = &h_.jm(),
                               .sessions = &sessions_,
                               .token_check = [](std::string_view token) -> absl::StatusOr<Caller> {
                                 if (token == "svc-token") return Admin();
                                 return absl::UnauthenticatedError("unknown token");
                               },
                               .clock = &h_.clock(),
                               .follows = follows_});
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

  // A live view as a browser holds it: the response read as it arrives, on a thread.
  struct Stream {
    std::unique_ptr<httplib::SSLClient> client;
    std::thread reader;
    std::mutex mu;
    std::string text;
    int status = 0;
    std::string retry_after;
    bool ended = false;

    ~Stream() { Close(); }
    void Close() {
      if (client) client->stop();
      if (reader.joinable()) reader.join();
    }
    // Waits (10 s at most) until the text received holds `needle`.
    bool Saw(const std::string& needle) {
      for (int i = 0; i < 1000; ++i) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (text.find(needle) != std::string::npos) return true;
          if (ended && i > 0) return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return false;
    }
    std::string Text() {
      std::lock_guard<std::mutex> lock(mu);
      return text;
    }
  };
  std::unique_ptr<Stream> Open(const std::string& path, httplib::Headers headers) {
    auto st = std::make_unique<Stream>();
    st->client = Client();
    st->client->set_read_timeout(60, 0);
    Stream* raw = st.get();
    st->reader = std::thread([raw, path, headers] {
      raw->client->Get(
          path, headers,
          [raw](const httplib::Response& r) {
            std::lock_guard<std::mutex> lock(raw->mu);
            raw->status = r.status;
            raw->retry_after = r.get_header_value("Retry-After");
            return true;
          },
          [raw](const char* data, size_t n) {
            std::lock_guard<std::mutex> lock(raw->mu);
            raw->text.append(data, n);
            return true;
          });
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->ended = true;
    });
    return st;
  }
  // Waits until closed live views have given their places back (their next step).
  void WaitForFollows(size_t n) {
    for (int i = 0; i < 500 && follows_->open() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(follows_->open(), n);
  }
  // The events of an event stream's text: each `data:` line parsed as a v1::Event.
  static std::vector<v1::Event> EventsIn(const std::string& text) {
    std::vector<v1::Event> out;
    size_t pos = 0;
    while ((pos = text.find("\ndata: ", pos)) != std::string::npos) {
      pos += 7;
      const std::string json = text.substr(pos, text.find('\n', pos) - pos);
      v1::Event ev;
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &ev).ok()) << json;
      out.push_back(ev);
    }
    return out;
  }

  TempDir dir_;
  Harness h_;
  Sessions sessions_;
  // Small follow limits, shared with "gRPC" (the test holds places as its streams would).
  std::shared_ptr<StreamQuota> follows_ = std::make_shared<StreamQuota>(2, 3);
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
  // ?state= filters as `baton queue --state` does (the nodes page asks for the holders).
  auto count = [&](const std::string& query) {
    auto r = Client()->Get("/api/v1/jobs?" + query, {{"Cookie", cookie}});
    v1::ListResponse page;
    if (!r || r->status != 200 ||
        !google::protobuf::util::JsonStringToMessage(r->body, &page).ok()) {
      return -1;
    }
    return page.jobs_size();
  };
  const v1::JobState now = parsed.jobs(0).state();
  EXPECT_EQ(count("state=" + absl::AsciiStrToLower(v1::JobState_Name(now).substr(10))), 2);
  EXPECT_EQ(count("state=succeeded&state=failed"), 0);
  auto bad = Client()->Get("/api/v1/jobs?state=sleeping", {{"Cookie", cookie}});
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(nlohmann::json::parse(bad->body)
                .value("message", "")
                .rfind("state: \"sleeping\" is not a job state", 0),
            0u)
      << bad->body;

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

TEST_F(WebServerTest, ALiveViewGetsEachNewEventOnceAndResumesFromLastEventId) {
  auto id = h_.Submit(Spec(1, 0, {"sleep", "100"}), Alice());
  ASSERT_TRUE(id.ok());
  const std::string cookie = SignIn();
  const std::string path = "/api/v1/events/stream?job=" + std::to_string(*id);
  auto live = Open(path, {{"Cookie", cookie}});
  ASSERT_TRUE(live->Saw("retry: ")) << live->Text();
  EXPECT_EQ(live->status, 200);
  EXPECT_EQ(follows_->open(), 1u) << "a place of the follow quota, as baton events -f";
  // Nothing old is replayed on a first connection without ?tail=: only what happens now.
  EXPECT_TRUE(EventsIn(live->Text()).empty()) << live->Text();

  auto other = h_.Submit(Spec(1, 0, {"sleep", "100"}), Alice());  // another job: not this view's
  ASSERT_TRUE(h_.Cancel(*id).ok());
  ASSERT_TRUE(live->Saw("JOB_STATE_CANCELLED")) << live->Text();
  std::vector<v1::Event> seen = EventsIn(live->Text());
  ASSERT_FALSE(seen.empty());
  for (const v1::Event& ev : seen) EXPECT_EQ(ev.job_id(), *id);
  EXPECT_NE(live->Text().find("id: " + std::to_string(seen.back().log_seq()) + "\n"),
            std::string::npos)
      << "each event's id is its log_seq";
  live->Close();
  WaitForFollows(0);

  // A reconnecting browser sends the last id it saw: nothing after it is lost, nothing
  // before it repeated.
  auto tail = Open(path + "&tail=100", {{"Cookie", cookie}});
  ASSERT_TRUE(tail->Saw("CANCELLED")) << tail->Text();
  std::vector<v1::Event> all = EventsIn(tail->Text());
  ASSERT_GE(all.size(), 2u) << "submitted, cancelled";
  tail->Close();
  WaitForFollows(0);
  auto resumed =
      Open(path, {{"Cookie", cookie}, {"Last-Event-ID", std::to_string(all.front().log_seq())}});
  ASSERT_TRUE(resumed->Saw("CANCELLED")) << resumed->Text();
  std::vector<v1::Event> after = EventsIn(resumed->Text());
  ASSERT_EQ(after.size(), all.size() - 1);
  EXPECT_EQ(after.front().log_seq(), all[1].log_seq());
  EXPECT_EQ(Client()->Get(path, {{"Cookie", cookie}, {"Last-Event-ID", "x"}})->status, 400);
  EXPECT_EQ(Client()->Get(path)->status, 401) << "no live view without a session";
  (void)other;
}

TEST_F(WebServerTest, LiveViewsCountAgainstTheFollowLimitsAndGiveTheirPlaceBack) {
  const std::string alice = SignIn();
  const std::string bob = SignIn(Bob());
  auto a1 = Open("/api/v1/events/stream", {{"Cookie", alice}});
  auto a2 = Open("/api/v1/events/stream", {{"Cookie", alice}});
  ASSERT_TRUE(a1->Saw("retry:") && a2->Saw("retry:"));
  auto a3 = Client()->Get("/api/v1/events/stream", {{"Cookie", alice}});
  ASSERT_TRUE(a3);
  EXPECT_EQ(a3->status, 503) << "past alice's 2: " << a3->body;
  EXPECT_EQ(a3->get_header_value("Retry-After"), "10");
  EXPECT_NE(a3->body.find("--max-follows-per-user"), std::string::npos) << a3->body;
  // The third place in all is taken by a gRPC stream (baton events -f): one quota.
  auto grpc_follow = follows_->Acquire("carol");
  ASSERT_TRUE(grpc_follow.ok());
  EXPECT_EQ(Client()->Get("/api/v1/events/stream", {{"Cookie", bob}})->status, 503)
      << "the limit in all";
  grpc_follow->reset();
  a1->Close();
  a2->Close();
  // A browser that went gives its place back within a few seconds, not at its next event.
  WaitForFollows(0);
  auto b1 = Open("/api/v1/events/stream", {{"Cookie", bob}});
  EXPECT_TRUE(b1->Saw("retry:"));
  EXPECT_EQ(b1->status, 200);
}

TEST_F(WebServerTest, RecentEventsDailyUsageAndTheirBadQueries) {
  auto id = h_.Submit(Spec(1, 0, {"sleep", "100"}), Alice());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(h_.Cancel(*id).ok());
  const std::string cookie = SignIn();
  auto res = Client()->Get("/api/v1/events?kind=transition&tail=1", {{"Cookie", cookie}});
  ASSERT_EQ(res->status, 200) << res->body;
  nlohmann::json j = nlohmann::json::parse(res->body);
  ASSERT_EQ(j["events"].size(), 1u);
  v1::Event ev;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(j["events"][0].dump(), &ev).ok());
  EXPECT_EQ(ev.to(), v1::JOB_STATE_CANCELLED) << "the newest";
  auto evictions = Client()->Get("/api/v1/events?kind=eviction", {{"Cookie", cookie}});
  EXPECT_EQ(nlohmann::json::parse(evictions->body)["events"].size(), 0u);
  for (const char* bad :
       {"/api/v1/events?kind=nope", "/api/v1/events?tail=0", "/api/v1/events?tail=5000",
        "/api/v1/events?job=x", "/api/v1/usage/daily?days=0", "/api/v1/usage/daily?by=planet"}) {
    auto r = Client()->Get(bad, {{"Cookie", cookie}});
    EXPECT_EQ(r->status, 400) << bad << ": " << r->body;
  }
  auto daily = Client()->Get("/api/v1/usage/daily?days=7", {{"Cookie", cookie}});
  ASSERT_EQ(daily->status, 200) << daily->body;
  nlohmann::json days = nlohmann::json::parse(daily->body)["days"];
  ASSERT_EQ(days.size(), 8u) << "seven whole days and today";
  int64_t last = 0;
  for (const auto& d : days) {
    v1::UsageResponse u;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(d.dump(), &u).ok()) << d.dump();
    EXPECT_GT(u.since_ms(), last) << "oldest first";
    last = u.since_ms();
  }
  EXPECT_EQ(Client()->Get("/api/v1/usage/daily?tenant=speech", {{"Cookie", cookie}})->status, 403)
      << "another tenant's usage, as baton usage refuses it";
}

TEST_F(WebServerTest, SignalAndDrainAreTheClisActionsWithItsRefusals) {
  h_.Connect("n1");
  auto id = h_.Submit(Spec(1, 1, {"sleep", "100"}), Alice());
  ASSERT_TRUE(id.ok());
  h_.Schedule();
  h_.Report("n1", Report(*id, 1, v1::AttemptReport::PHASE_RUNNING));
  ASSERT_EQ(h_.State(*id), v1::JOB_STATE_RUNNING);
  h_.Commands("n1");
  const std::string cookie = SignIn();
  const std::string csrf = Csrf(cookie);
  httplib::Headers action = {{"Cookie", cookie}, {"Origin", origin_}, {"X-CSRF-Token", csrf}};
  const std::string signal = "/api/v1/jobs/" + std::to_string(*id) + "/signal";
  EXPECT_EQ(Client()
                ->Post(signal, {{"Cookie", cookie}, {"Origin", origin_}}, R"({"signal":"USR1"})",
                       "application/json")
                ->status,
            403)
      << "no CSRF token";
  EXPECT_EQ(Client()->Post(signal, action, R"({"signal":"KILL"})", "application/json")->status,
            400);
  EXPECT_EQ(Client()->Post(signal, action, "not json", "application/json")->status, 400);
  auto sent = Client()->Post(signal, action, R"({"signal":"USR1"})", "application/json");
  ASSERT_EQ(sent->status, 200) << sent->body;
  bool signalled = false;
  for (const auto& c : h_.Commands("n1")) signalled |= c.has_signal();
  EXPECT_TRUE(signalled) << "the agent was told";

  // Drain: admins only ("drain nodes"), the same sentence as `baton drain` gives.
  auto refused =
      Client()->Post("/api/v1/nodes/n1/drain", action, R"({"reason":"disk"})", "application/json");
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(refused->body.find("drain nodes"), std::string::npos) << refused->body;
  auto drained = Client()->Post("/api/v1/nodes/n1/drain", {{"Authorization", "Bearer svc-token"}},
                                R"({"reason":"<b>disk</b>"})", "application/json");
  ASSERT_EQ(drained->status, 200) << drained->body;
  v1::Node node;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(drained->body, &node).ok());
  EXPECT_TRUE(node.has_drain());
  EXPECT_EQ(node.drain().reason(), "<b>disk</b>") << "kept as text; the page renders it so";
  EXPECT_EQ(Client()
                ->Post("/api/v1/nodes/n1/drain", {{"Authorization", "Bearer svc-token"}},
                       R"({"evict":"yes"})", "application/json")
                ->status,
            400);
  auto back = Client()->Post("/api/v1/nodes/n1/undrain", {{"Authorization", "Bearer svc-token"}},
                             "", "text/plain");
  ASSERT_EQ(back->status, 200) << back->body;
  EXPECT_EQ(Client()
                ->Post("/api/v1/nodes/nope/undrain", {{"Authorization", "Bearer svc-token"}}, "",
                       "text/plain")
                ->status,
            404);
}

TEST(WebSse, ALineBreakInDataCannotForgeAnotherRecord) {
  EXPECT_EQ(web::SseEvent("7", "event", "{\"a\":1}"), "id: 7\nevent: event\ndata: {\"a\":1}\n\n");
  const std::string forged = web::SseEvent("", "", "x\n\nid: 99\ndata: evil");
  EXPECT_EQ(forged, "data: x\ndata: \ndata: id: 99\ndata: data: evil\n\n");
}

TEST(WebPool, ThreadsComeWithWorkUpToTheLimitAndGoWhenIdle) {
  web::ElasticPool pool(1, 3, absl::Milliseconds(200));
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    pool.enqueue([&] {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
      ++ran;
    });
  }
  for (int i = 0; i < 200 && pool.threads() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(pool.threads(), 3u) << "one per blocked task, up to the limit";
  EXPECT_EQ(ran.load(), 0);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (int i = 0; i < 400 && (ran.load() < 5 || pool.threads() > 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(ran.load(), 5) << "the two that waited in line ran too";
  EXPECT_EQ(pool.threads(), 1u) << "idle ones went, down to the minimum";
  EXPECT_EQ(pool.peak(), 3u);
  pool.shutdown();
  EXPECT_EQ(pool.threads(), 0u);
}

TEST(WebPool, AWriteToAConnectionThePeerClosedFailsInsteadOfEndingTheProcess) {
  // OpenSSL writes to the socket without MSG_NOSIGNAL: a browser gone under a live view's
  // write would raise SIGPIPE, which ends a process by default.
  web::ElasticPool pool(1, 2);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  std::promise<int> result;
  pool.enqueue([&] {
    ssize_t n = write(fds[1], "x", 1);
    result.set_value(n < 0 ? errno : 0);
  });
  EXPECT_EQ(result.get_future().get(), EPIPE);
  close(fds[1]);
}

TEST(WebServerStart, PlaintextOnlyOnLoopbackAndTlsInPairs) {
  Harness h;
  Sessions s;
  const web::WebDeps deps{.jobs = &h.jm(), .sessions = &s, .clock = &h.clock()};
  auto plain = web::WebServer::Start({.listen = "0.0.0.0:0"}, deps);
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plain.status().message().find("plaintext only on loopback"), std::string::npos);
  auto half = web::WebServer::Start({.listen = "127.0.0.1:0", .tls_cert = "/x.crt"}, deps);
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument);
  auto missing = web::WebServer::Start(
      {.listen = "127.0.0.1:0", .tls_cert = "/nonexistent.crt", .tls_key = "/nonexistent.key"},
      deps);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
  auto local = web::WebServer::Start({.listen = "127.0.0.1:0"}, deps);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ((*local)->LoginLink("s").rfind("http://127.0.0.1:", 0), 0u);
}

}  // namespace
}  // namespace baton::testing
