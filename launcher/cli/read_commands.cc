// baton queue | status JOB | nodes: what is running, waiting, and where.
#include <iostream>

#include "common/clock.h"
#include "common/resources.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"

namespace baton::cli {
int RunQueue(const Args& args) {
  cxxopts::Options opts("baton queue",
                        "Jobs: running first, then pending in the order they will be served.");
  opts.add_options()("a,all", "include finished jobs")("tenant", "only this tenant's jobs",
                                                       cxxopts::value<std::string>())(
      "state", "only jobs in this state (repeatable): pending, running, …",
      cxxopts::value<std::vector<std::string>>())("limit", "at most this many",
                                                  cxxopts::value<uint32_t>()->default_value("0"))(
      "array", "a row per task of each array (17_5) instead of one per array");
  AddCommonFlags(opts);
  AddOutputFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  v1::ListRequest req;
  req.set_all(r->count("all"));
  req.set_limit((*r)["limit"].as<uint32_t>());
  if (r->count("tenant")) req.set_tenant((*r)["tenant"].as<std::string>());
  if (r->count("state")) {
    for (const auto& name : (*r)["state"].as<std::vector<std::string>>()) {
      auto st = ParseStateName(name);
      if (!st.ok()) {
        std::cerr << "baton queue: --state: " << st.status().message() << "\n";
        return kUsage;
      }
      req.add_states(*st);
    }
  }
  Client client(*conn);
  // Page by page (each at most ~2 MiB), up to --limit jobs in all.
  const uint32_t limit = req.limit();
  v1::ListResponse resp;
  do {
    if (limit > 0) req.set_limit(limit - static_cast<uint32_t>(resp.jobs_size()));
    v1::ListResponse page;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->List(ctx.get(), req, &page);
    if (!s.ok()) return ReportError("queue", s, conn->coordinator);
    for (auto& job : *page.mutable_jobs()) *resp.add_jobs() = std::move(job);
    for (auto& a : *page.mutable_arrays()) *resp.add_arrays() = std::move(a);
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty() &&
           (limit == 0 || static_cast<uint32_t>(resp.jobs_size()) < limit));
  std::cout << Render(
      QueueListing(resp.jobs(), RealClock::Get()->NowMs(), resp.arrays(), r->count("array") > 0),
      Output(*r));
  return kOk;
}

namespace {

// A per-job command that makes one call for each job and prints its reply: the
// coordinator's `method` (Get, Explain) taking a request with only the job id set.
template <typename Request, typename Reply>
PerJob PrintEach(grpc::Status (v1::Coordinator::Stub::*method)(grpc::ClientContext*, const Request&,
                                                               Reply*),
                 std::string (*render)(uint64_t id, const Reply&, const OutputOptions&)) {
  return [method, render](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
    Request req;
    req.set_job_id(id);
    Reply reply;
    auto ctx = client.Context();
    grpc::Status s = (client.stub()->*method)(ctx.get(), req, &reply);
    if (s.ok()) std::cout << render(id, reply, Output(r));
    return s;
  };
}

std::string RenderStatus(uint64_t /*id*/, const v1::Job& job, const OutputOptions& options) {
  return RenderJob(job, RealClock::Get()->NowMs(), options);
}

}  // namespace

int RunStatus(const Args& args) {
  cxxopts::Options opts("baton status", "Jobs: state, placement, attempts, events.");
  AddOutputFlags(opts);
  PerJob job = PrintEach(&v1::Coordinator::Stub::Get, RenderStatus);
  return ForEachJob(opts, args, "status",
                    [job](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
                      grpc::Status s = job(client, r, id);
                      if (s.error_code() != grpc::StatusCode::NOT_FOUND) return s;
                      // Not a job: perhaps an array (all of its tasks).
                      v1::GetRequest req;
                      req.set_job_id(id);
                      v1::JobArray array;
                      auto ctx = client.Context();
                      if (!client.stub()->GetArray(ctx.get(), req, &array).ok()) return s;
                      std::cout << RenderArray(array, RealClock::Get()->NowMs(), Output(r));
                      return grpc::Status::OK;
                    });
}

int RunExplain(const Args& args) {
  cxxopts::Options opts("baton explain",
                        "Why a job is pending — the blocking constraint and its place in the "
                        "queue — and whom the next scheduling pass would evict for it.");
  AddOutputFlags(opts);
  return ForEachJob(opts, args, "explain",
                    PrintEach(&v1::Coordinator::Stub::Explain, RenderExplanation));
}

int RunNodes(const Args& args) {
  cxxopts::Options opts("baton nodes", "Nodes, their state and what is allocated on them.");
  AddOutputFlags(opts);
  return RunOneCall(opts, args, "nodes", [](Client& client, const cxxopts::ParseResult& r) {
    v1::ListNodesResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->ListNodes(ctx.get(), v1::ListNodesRequest(), &resp);
    if (!s.ok()) return s;
    std::cout << Render(
        NodesListing(resp.nodes(), RealClock::Get()->NowMs(),
                     {resp.topology_levels().begin(), resp.topology_levels().end()}),
        Output(r));
    return s;
  });
}

}  // namespace baton::cli
