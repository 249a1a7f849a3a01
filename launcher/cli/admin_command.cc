// baton admin policy … (= baton policy …) and baton admin token create | list | revoke:
// service tokens for automation (admins); baton whoami: who the coordinator takes you to
// be, and why; baton admin ha status | step-down: the HA replicas (docs/ha.md).
#include <chrono>
#include <iostream>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/resources.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"

namespace baton::cli {
namespace {

int TokenCreate(const Args& args) {
  cxxopts::Options opts("baton admin token create",
                        "Create a service token for automation (admins). It acts as --user "
                        "(its jobs are that user's) and, with --tenant, only in that tenant. "
                        "The secret is printed once: set it as BATON_TOKEN.");
  opts.add_options()("user", "the user the token acts as", cxxopts::value<std::string>())(
      "tenant", "bind it to one of the user's tenants", cxxopts::value<std::string>())(
      "ttl", "lifetime (30d, 12h; at most 3650d)",
      cxxopts::value<std::string>()->default_value("30d"))(
      "m,comment", "what it is for", cxxopts::value<std::string>()->default_value(""));
  return RunOneCall(opts, args, "token create", [](Client& client, const cxxopts::ParseResult& r) {
    if (!r.count("user")) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "--user is required");
    }
    auto ttl = ParseDurationSeconds(r["ttl"].as<std::string>());
    if (!ttl.ok() || *ttl == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "--ttl: expected a positive duration like 30d or 12h");
    }
    v1::CreateTokenRequest req;
    req.set_user(r["user"].as<std::string>());
    if (r.count("tenant")) req.set_tenant(r["tenant"].as<std::string>());
    req.set_ttl_seconds(static_cast<int64_t>(*ttl));
    req.set_comment(r["comment"].as<std::string>());
    v1::CreateTokenResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->CreateToken(ctx.get(), req, &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
    } else {
      std::cerr << "Token " << resp.token().id() << " for " << resp.token().user()
                << (resp.token().tenant().empty() ? "" : " (tenant " + resp.token().tenant() + ")")
                << ", expires " << Date(resp.token().expires_ms())
                << " UTC. Shown once; keep it secret:\n";
      std::cout << resp.secret() << "\n";
    }
    return s;
  });
}

int TokenList(const Args& args) {
  cxxopts::Options opts("baton admin token list", "Service tokens (admins); never their secrets.");
  opts.add_options()("a,all", "include revoked and expired tokens");
  AddOutputFlags(opts);
  return RunOneCall(opts, args, "token list", [](Client& client, const cxxopts::ParseResult& r) {
    v1::ListTokensRequest req;
    req.set_all(r.count("all") > 0);
    v1::ListTokensResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->ListTokens(ctx.get(), req, &resp);
    if (!s.ok()) return s;
    std::cout << Render(TokensListing(resp.tokens(), RealClock::Get()->NowMs()), Output(r));
    return s;
  });
}

int TokenRevoke(const Args& args) {
  cxxopts::Options opts("baton admin token revoke",
                        "Revoke a service token (admins): refused from now on.");
  opts.add_options()("id", "token id", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"id"});
  opts.positional_help("ID");
  return RunOneCall(opts, args, "token revoke", [](Client& client, const cxxopts::ParseResult& r) {
    if (!r.count("id") || r["id"].as<std::vector<std::string>>().size() != 1) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "give exactly one token id");
    }
    v1::RevokeTokenRequest req;
    req.set_id(r["id"].as<std::vector<std::string>>().front());
    v1::TokenInfo resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->RevokeToken(ctx.get(), req, &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
    } else {
      std::cout << "Token " << resp.id() << " of " << resp.user() << " revoked\n";
    }
    return s;
  });
}

int RunToken(const Args& args) {
  std::string verb = args.empty() ? "" : args[0];
  Args rest = args.empty() ? Args{} : Args(args.begin() + 1, args.end());
  if (verb == "create") return TokenCreate(rest);
  if (verb == "list") return TokenList(rest);
  if (verb == "revoke") return TokenRevoke(rest);
  std::cerr << "usage: baton admin token create --user U [--tenant T] [--ttl 30d] | list | "
               "revoke ID\n";
  return kUsage;
}

int HaStatus(const Args& args) {
  cxxopts::Options opts("baton admin ha status",
                        "The HA replicas (admins; docs/ha.md): the leader and its epoch, each "
                        "replica's applied log index and lag, each etcd endpoint's health.");
  return RunOneCall(opts, args, "ha status", [](Client& client, const cxxopts::ParseResult& r) {
    v1::HaStatusResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->HaStatus(ctx.get(), v1::HaStatusRequest(), &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
      return s;
    }
    std::cout << "cluster " << resp.cluster_id() << ": " << resp.leader() << " leads, epoch "
              << resp.epoch() << "; log entries " << resp.log_first_index() << ".."
              << resp.log_index() << "\n";
    int64_t now = RealClock::Get()->NowMs();
    for (const auto& rep : resp.replicas()) {
      std::cout << "  " << rep.name() << (rep.leader() ? " (leader)" : "") << "  " << rep.address()
                << "  applied " << rep.applied_index() << "  lag " << rep.lag() << "  seen "
                << Ago(rep.updated_ms(), now) << "\n";
    }
    for (const auto& e : resp.etcd()) {
      std::cout << "  etcd " << e.endpoint() << "  "
                << (e.healthy() ? (e.leader() ? "healthy, raft leader" : "healthy")
                                : "UNHEALTHY: " + e.error())
                << (e.healthy() ? "  db " + std::to_string(e.db_size_bytes() >> 10) + " KiB" : "")
                << "\n";
    }
    return s;
  });
}

int HaStepDown(const Args& args) {
  cxxopts::Options opts("baton admin ha step-down",
                        "Hand the leadership over (admins): the leader gives up its election "
                        "key, a warm standby takes over, the old leader rejoins as a standby. "
                        "Waits (within --timeout) until another replica leads.");
  return RunOneCall(opts, args, "ha step-down", [](Client& client, const cxxopts::ParseResult& r) {
    v1::HaStepDownResponse resp;
    auto ctx = client.Context();
    auto began = std::chrono::steady_clock::now();
    grpc::Status s = client.stub()->HaStepDown(ctx.get(), v1::HaStepDownRequest(), &resp);
    if (!s.ok()) return s;
    if (!r.count("json")) {
      std::cerr << resp.leader() << " stepped down (epoch " << resp.epoch()
                << " is over); waiting for the next leader ...\n";
    }
    v1::HaStatusResponse next;
    const auto give_up = began + client.options().timeout;
    for (;;) {
      auto c = client.Context();
      grpc::Status st = client.stub()->HaStatus(c.get(), v1::HaStatusRequest(), &next);
      if (st.ok() && next.epoch() > resp.epoch()) break;
      if (std::chrono::steady_clock::now() >= give_up) {
        return st.ok() ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                      "no other replica led within --timeout")
                       : st;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (r.count("json")) {
      std::cout << ToJson(next) << "\n";
    } else {
      std::cout << next.leader() << " leads (epoch " << next.epoch() << "), "
                << absl::StrFormat("%.2f", took) << " s after the step-down\n";
    }
    return grpc::Status::OK;
  });
}

int RunHa(const Args& args) {
  std::string verb = args.empty() ? "" : args[0];
  Args rest = args.empty() ? Args{} : Args(args.begin() + 1, args.end());
  if (verb == "status") return HaStatus(rest);
  if (verb == "step-down") return HaStepDown(rest);
  std::cerr << "usage: baton admin ha status | step-down\n";
  return kUsage;
}

}  // namespace

int RunAdmin(const Args& args) {
  if (!args.empty() && args[0] == "policy") return RunPolicy(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "token") return RunToken(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "backup") return RunBackup(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "ha") return RunHa(Args(args.begin() + 1, args.end()));
  std::cerr << "usage: baton admin policy get | set FILE   (the same as `baton policy`)\n"
               "       baton admin token create --user U [--tenant T] [--ttl 30d] | list | "
               "revoke ID\n"
               "       baton admin backup DIR\n"
               "       baton admin ha status | step-down\n";
  return kUsage;
}

int RunWhoAmI(const Args& args) {
  cxxopts::Options opts("baton whoami",
                        "Who the coordinator takes you to be: your proven user, how it was "
                        "proven (MUNGE or a service token), your tenants, whether you are an "
                        "admin.");
  return RunOneCall(opts, args, "whoami", [](Client& client, const cxxopts::ParseResult& r) {
    v1::WhoAmIResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->WhoAmI(ctx.get(), v1::WhoAmIRequest(), &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
      return s;
    }
    std::string tenants;
    for (const auto& t : resp.tenants()) tenants += (tenants.empty() ? "" : ", ") + t;
    std::cout << resp.user() << " (uid " << resp.uid() << "), proven by " << resp.method()
              << (resp.token_id().empty() ? "" : " " + resp.token_id()) << "\n"
              << "tenants: " << (tenants.empty() ? "none (ask an admin)" : tenants) << "\n"
              << "admin:   " << (resp.admin() ? "yes" : "no") << "\n";
    return s;
  });
}

int RunUi(const Args& args) {
  cxxopts::Options opts("baton ui",
                        "A one-time login link to the web dashboard: open it within 60 s; it "
                        "works once and signs you in as yourself (docs/web.md).");
  return RunOneCall(opts, args, "ui", [](Client& client, const cxxopts::ParseResult& r) {
    v1::WebLoginResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->WebLogin(ctx.get(), v1::WebLoginRequest(), &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
      return s;
    }
    std::cout << "Open within 60 s (it signs you in once, then is spent):\n  " << resp.url()
              << "\n";
    return s;
  });
}

}  // namespace baton::cli
