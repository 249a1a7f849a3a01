// baton usage | history: the bill (GPU-hours, outcomes and waits from the coordinator's
// per-day rollup) and the finished jobs still retained (the sacct of baton).
#include <iostream>

#include "common/clock.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"
#include "proto/rpc_util.h"

namespace baton::cli {
namespace {

grpc::Status Invalid(const std::string& what) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, what);
}

// --since and --until as unix ms (until 0: now).
grpc::Status ParseRange(const cxxopts::ParseResult& r, int64_t* since, int64_t* until) {
  const int64_t now = RealClock::Get()->NowMs();
  auto s = ParseWhen(r["since"].as<std::string>(), now);
  if (!s.ok()) return Invalid("--since " + std::string(s.status().message()));
  *since = *s;
  *until = 0;
  if (r.count("until")) {
    auto u = ParseWhen(r["until"].as<std::string>(), now);
    if (!u.ok()) return Invalid("--until " + std::string(u.status().message()));
    *until = *u;
  }
  if (*until != 0 ? *until <= *since : now <= *since) {
    return Invalid("--since must be before --until (or now)");
  }
  return grpc::Status::OK;
}

}  // namespace

int RunUsage(const Args& args) {
  cxxopts::Options opts(
      "baton usage",
      "GPU-hours allocated and lost to evictions, jobs ended by how, and queue waits (p50, "
      "p95), per tenant, user or class, from the coordinator's per-day rollup (whole UTC "
      "days). Members read their own tenants' usage; admins everyone's.");
  opts.add_options()("since", "from (30d ago, 2026-11-01, or an RFC 3339 time)",
                     cxxopts::value<std::string>()->default_value("30d"))(
      "until", "to (default now; same forms as --since)", cxxopts::value<std::string>())(
      "by", "tenant, user or class", cxxopts::value<std::string>()->default_value("tenant"))(
      "tenant", "only this tenant", cxxopts::value<std::string>());
  AddOutputFlags(opts);
  return RunOneCall(opts, args, "usage", [](Client& client, const cxxopts::ParseResult& r) {
    v1::UsageRequest req;
    int64_t since = 0, until = 0;
    if (grpc::Status s = ParseRange(r, &since, &until); !s.ok()) return s;
    req.set_since_ms(since);
    req.set_until_ms(until);
    const std::string by = r["by"].as<std::string>();
    if (by == "tenant") {
      req.set_by(v1::USAGE_GROUP_TENANT);
    } else if (by == "user") {
      req.set_by(v1::USAGE_GROUP_USER);
    } else if (by == "class") {
      req.set_by(v1::USAGE_GROUP_CLASS);
    } else {
      return Invalid("--by '" + by + "': expected tenant, user or class");
    }
    if (r.count("tenant")) req.set_tenant(r["tenant"].as<std::string>());
    v1::UsageResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->Usage(ctx.get(), req, &resp);
    if (!s.ok()) return s;
    std::cout << Render(UsageListing(resp, req.by()), Output(r));
    return s;
  });
}

int RunHistory(const Args& args) {
  cxxopts::Options opts("baton history",
                        "Finished jobs still retained (the coordinator's --retention), newest "
                        "end first: start, end, exit, nodes and GPU-hours.");
  opts.add_options()("user", "only this user's jobs", cxxopts::value<std::string>())(
      "tenant", "only this tenant's jobs", cxxopts::value<std::string>())(
      "since", "ended from (7d ago, 2026-11-01, or an RFC 3339 time)",
      cxxopts::value<std::string>()->default_value("7d"))("until", "ended before (default now)",
                                                          cxxopts::value<std::string>())(
      "state", "only this end (repeatable): succeeded, failed, cancelled",
      cxxopts::value<std::vector<std::string>>())(
      "limit", "at most this many", cxxopts::value<uint32_t>()->default_value("1000"));
  AddOutputFlags(opts);
  return RunOneCall(opts, args, "history", [](Client& client, const cxxopts::ParseResult& r) {
    v1::HistoryRequest req;
    int64_t since = 0, until = 0;
    if (grpc::Status s = ParseRange(r, &since, &until); !s.ok()) return s;
    req.set_since_ms(since);
    req.set_until_ms(until);
    if (r.count("user")) req.set_user(r["user"].as<std::string>());
    if (r.count("tenant")) req.set_tenant(r["tenant"].as<std::string>());
    if (r.count("state")) {
      for (const auto& name : r["state"].as<std::vector<std::string>>()) {
        auto st = ParseStateName(name);
        if (!st.ok() || !IsTerminal(*st)) {
          return Invalid("--state '" + name + "': expected succeeded, failed or cancelled");
        }
        req.add_states(*st);
      }
    }
    const uint32_t limit = r["limit"].as<uint32_t>();
    if (limit == 0) return Invalid("--limit must be at least 1");
    // Page by page, up to --limit jobs.
    v1::HistoryResponse all;
    bool more = false;
    do {
      req.set_limit(std::min<uint32_t>(limit - static_cast<uint32_t>(all.jobs_size()), 1000));
      v1::HistoryResponse page;
      auto ctx = client.Context();
      grpc::Status s = client.stub()->History(ctx.get(), req, &page);
      if (!s.ok()) return s;
      for (auto& job : *page.mutable_jobs()) *all.add_jobs() = std::move(job);
      more = !page.next_page_token().empty();
      req.set_page_token(page.next_page_token());
    } while (more && static_cast<uint32_t>(all.jobs_size()) < limit);
    Listing l = HistoryListing(all.jobs());
    if (more) l.footer = "more jobs ended in the range: raise --limit or narrow --since\n";
    std::cout << Render(l, Output(r));
    return grpc::Status::OK;
  });
}

}  // namespace baton::cli
