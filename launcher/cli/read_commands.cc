// baton queue | status JOB | nodes: what is running, waiting, and where.
#include <iostream>

#include "common/clock.h"
#include "common/resources.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/options.h"

namespace baton::cli {
namespace {

std::string Truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "…";
}

// "cgroup-v2, eth1 10000 Mbit/s" / "none".
std::string NodeIsolationText(const v1::NodeIsolation& iso) {
  std::string out = iso.mode().empty() ? "none" : iso.mode();
  if (!iso.nic().empty()) out += ", " + iso.nic() + " " + std::to_string(iso.nic_mbps()) + "Mbit";
  return out;
}

}  // namespace

int RunQueue(const Args& args) {
  cxxopts::Options opts("baton queue",
                        "Jobs: running first, then pending in the order they will be served.");
  opts.add_options()("a,all", "include finished jobs")("tenant", "only this tenant's jobs",
                                                       cxxopts::value<std::string>())(
      "state", "only jobs in this state (repeatable): pending, running, …",
      cxxopts::value<std::vector<std::string>>())("limit", "at most this many",
                                                  cxxopts::value<uint32_t>()->default_value("0"));
  AddCommonFlags(opts);
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
    req.set_page_token(page.next_page_token());
  } while (!req.page_token().empty() &&
           (limit == 0 || static_cast<uint32_t>(resp.jobs_size()) < limit));
  if (r->count("json")) {
    for (const auto& job : resp.jobs()) std::cout << ToJson(job) << "\n";
    return kOk;
  }
  int64_t now = RealClock::Get()->NowMs();
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "TENANT", "USER", "CLASS", "STATE", "NODES", "GPUS", "SUBMITTED", "REASON"}};
  for (const auto& job : resp.jobs()) {
    const auto& sp = job.spec();
    rows.push_back({std::to_string(job.id()), Truncate(sp.name(), 20), sp.tenant(), job.user(),
                    sp.priority_class(), StateName(job.state()), std::to_string(sp.nodes()),
                    std::to_string(sp.nodes() * sp.gpus_per_node()), Ago(job.submitted_ms(), now),
                    Truncate(job.message(), 60)});
  }
  std::cout << Table(rows);
  return kOk;
}

int RunStatus(const Args& args) {
  cxxopts::Options opts("baton status", "Jobs: state, placement, attempts, events.");
  return ForEachJob(
      opts, args, "status", [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
        v1::GetRequest req;
        req.set_job_id(id);
        v1::Job job;
        auto ctx = client.Context();
        grpc::Status s = client.stub()->Get(ctx.get(), req, &job);
        if (s.ok()) {
          std::cout << (r.count("json") ? ToJson(job) + "\n"
                                        : DescribeJob(job, RealClock::Get()->NowMs()));
        }
        return s;
      });
}

int RunExplain(const Args& args) {
  cxxopts::Options opts("baton explain",
                        "Why a job is pending — the blocking constraint and its place in the "
                        "queue — and whom the next scheduling pass would evict for it.");
  return ForEachJob(opts, args, "explain",
                    [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
                      v1::ExplainRequest req;
                      req.set_job_id(id);
                      v1::ExplainResponse resp;
                      auto ctx = client.Context();
                      grpc::Status s = client.stub()->Explain(ctx.get(), req, &resp);
                      if (s.ok())
                        std::cout << (r.count("json") ? ToJson(resp) + "\n" : resp.text());
                      return s;
                    });
}

int RunNodes(const Args& args) {
  cxxopts::Options opts("baton nodes", "Nodes, their state and what is allocated on them.");
  return RunOneCall(opts, args, "nodes", [](Client& client, const cxxopts::ParseResult& r) {
    v1::ListNodesResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->ListNodes(ctx.get(), v1::ListNodesRequest(), &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      for (const auto& n : resp.nodes()) std::cout << ToJson(n) << "\n";
      return s;
    }
    std::vector<std::vector<std::string>> rows = {
        {"NAME", "STATE", "CPUS", "MEMORY", "GPUS", "POOL", "ISOLATION", "ADDRESS", "JOBS"}};
    for (const auto& n : resp.nodes()) {
      const auto& inv = n.inventory();
      std::string jobs;
      for (uint64_t j : n.running_jobs()) jobs += (jobs.empty() ? "" : ",") + std::to_string(j);
      rows.push_back(
          {n.name(), NodeStateName(n.state()),
           FormatCpuMillis(n.allocated_cpu_millis()) + "/" + std::to_string(inv.cpus()),
           FormatBytes(n.allocated_memory_bytes()) + "/" + FormatBytes(inv.memory_bytes()),
           std::to_string(n.allocated_gpus()) + "/" + std::to_string(inv.gpus_size()),
           n.pool().empty() ? "default" : n.pool(), NodeIsolationText(n.isolation()), n.address(),
           jobs.empty() ? "-" : jobs});
    }
    std::cout << Table(rows);
    std::string limits = LimitsTable({resp.nodes().begin(), resp.nodes().end()});
    if (!limits.empty()) std::cout << "\n" << limits;
    return s;
  });
}

}  // namespace baton::cli
