// baton logs JOB [-f] | cancel JOB... | hold JOB... | release JOB... | requeue JOB...: a
// job's output, stopping jobs, holding waiting ones back, and putting started ones back
// in line.
#include <csignal>
#include <iostream>
#include <optional>

#include "common/job_signal.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/options.h"

namespace baton::cli {

namespace {

// Who a reply names: "Job 17", or for an array's id "Array 17 (5 tasks)".
std::string Reached(uint64_t id, bool array, const v1::ArrayReach& reach) {
  if (!array) return "Job " + std::to_string(id);
  return "Array " + std::to_string(id) + " (" + std::to_string(reach.tasks()) + " task" +
         (reach.tasks() == 1 ? "" : "s") + ")";
}

// `,"array":{"tasks":5}` after a reply's JSON fields, when it named an array.
std::string ArrayJson(bool array, const v1::ArrayReach& reach) {
  return array ? ",\"array\":" + ToJson(reach) : "";
}

}  // namespace

int RunLogs(const Args& args) {
  cxxopts::Options opts("baton logs", "A job's output (stdout and stderr of its ranks).");
  opts.add_options()("job", "job id", cxxopts::value<std::vector<std::string>>())(
      "f,follow", "keep printing while the job runs")(
      "attempt", "attempt number (default: the latest)",
      cxxopts::value<uint32_t>()->default_value("0"))(
      "node", "node of the gang (default: its first)",
      cxxopts::value<std::string>()->default_value(""))(
      "rank", "only this rank's lines (its node is found for you)", cxxopts::value<int32_t>());
  opts.parse_positional({"job"});
  opts.positional_help("JOB");
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  auto ids = JobIds(*r, "logs", &code);
  if (!ids) return code;
  if (ids->size() != 1) {
    std::cerr << "baton logs: give exactly one job id\n";
    return kUsage;
  }
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  absl::StatusOr<uint64_t> id = ResolveJobRef(client, ids->front());
  if (!id.ok())
    return ReportError("logs " + ids->front().text, ToGrpc(id.status()), conn->coordinator);
  v1::LogsRequest req;
  req.set_job_id(*id);
  req.set_follow(r->count("follow"));
  req.set_attempt((*r)["attempt"].as<uint32_t>());
  req.set_node((*r)["node"].as<std::string>());
  if (r->count("rank")) req.set_rank((*r)["rank"].as<int32_t>());
  auto ctx = client.Context(/*streaming=*/req.follow());
  auto reader = client.stub()->Logs(ctx.get(), req);
  v1::LogChunk chunk;
  while (reader->Read(&chunk)) {
    std::cout.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return ReportError("logs", s, conn->coordinator);
  return kOk;
}

int RunCancel(const Args& args) {
  cxxopts::Options opts("baton cancel",
                        "Cancel jobs: pending ones at once, running ones by SIGTERM, then "
                        "SIGKILL after their grace period.");
  opts.add_options()("reason", "why (recorded in the job's events)",
                     cxxopts::value<std::string>()->default_value(""));
  return ForEachJob(
      opts, args, "cancel", [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
        v1::CancelRequest req;
        req.set_job_id(id);
        req.set_reason(r["reason"].as<std::string>());
        v1::CancelResponse resp;
        auto ctx = client.Context();
        grpc::Status s = client.stub()->Cancel(ctx.get(), req, &resp);
        if (!s.ok()) return s;
        if (r.count("json")) {
          std::cout << "{\"jobId\":\"" << id << "\",\"state\":\"" << v1::JobState_Name(resp.state())
                    << "\"}\n";
        } else if (resp.state() == v1::JOB_STATE_CANCELLED) {
          std::cout << "Job " << id << " cancelled\n";
        } else {
          std::cout << "Job " << id << " is stopping (" << StateName(resp.state()) << ")\n";
        }
        return s;
      });
}

int RunHold(const Args& args) {
  cxxopts::Options opts("baton hold",
                        "Hold waiting jobs: they keep their place in line but never start until "
                        "released (a flag, not a state). Owners, members of the job's tenant and "
                        "admins; only an admin releases an admin's hold.");
  opts.add_options()("reason", "why (shown by queue and explain, recorded in the job's events)",
                     cxxopts::value<std::string>()->default_value(""));
  return ForEachJob(opts, args, "hold",
                    [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
                      v1::HoldRequest req;
                      req.set_job_id(id);
                      req.set_reason(r["reason"].as<std::string>());
                      v1::HoldResponse resp;
                      auto ctx = client.Context();
                      grpc::Status s = client.stub()->Hold(ctx.get(), req, &resp);
                      if (!s.ok()) return s;
                      if (r.count("json")) {
                        std::cout << "{\"jobId\":\"" << id << "\",\"hold\":" << ToJson(resp.hold())
                                  << ArrayJson(resp.has_array(), resp.array()) << "}\n";
                      } else {
                        std::cout << Reached(id, resp.has_array(), resp.array()) << " held"
                                  << (resp.hold().by_admin() ? " (an admin's hold)" : "") << "\n";
                      }
                      return s;
                    });
}

int RunRelease(const Args& args) {
  cxxopts::Options opts("baton release", "Release held jobs: they may start again.");
  return ForEachJob(opts, args, "release",
                    [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
                      v1::ReleaseRequest req;
                      req.set_job_id(id);
                      v1::ReleaseResponse resp;
                      auto ctx = client.Context();
                      grpc::Status s = client.stub()->Release(ctx.get(), req, &resp);
                      if (!s.ok()) return s;
                      if (r.count("json")) {
                        std::cout << "{\"jobId\":\"" << id << "\",\"released\":true"
                                  << ArrayJson(resp.has_array(), resp.array()) << "}\n";
                      } else {
                        std::cout << Reached(id, resp.has_array(), resp.array()) << " released\n";
                      }
                      return s;
                    });
}

int RunRequeue(const Args& args) {
  cxxopts::Options opts("baton requeue",
                        "Stop started jobs as a drain does (SIGUSR1: checkpoint within the grace "
                        "period, then exit) and put them back in line at once: no failure, no "
                        "eviction counted, no cooldown. A service only by admins.");
  opts.add_options()("reason", "why (recorded in the job's events)",
                     cxxopts::value<std::string>()->default_value(""));
  return ForEachJob(
      opts, args, "requeue", [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
        v1::RequeueRequest req;
        req.set_job_id(id);
        req.set_reason(r["reason"].as<std::string>());
        v1::RequeueResponse resp;
        auto ctx = client.Context();
        grpc::Status s = client.stub()->Requeue(ctx.get(), req, &resp);
        if (!s.ok()) return s;
        if (r.count("json")) {
          std::cout << "{\"jobId\":\"" << id << "\",\"state\":\"" << v1::JobState_Name(resp.state())
                    << "\"" << ArrayJson(resp.has_array(), resp.array()) << "}\n";
        } else {
          std::cout << Reached(id, resp.has_array(), resp.array())
                    << (resp.has_array() ? " stopping" : " is stopping") << " to be requeued ("
                    << StateName(resp.state()) << ")\n";
        }
        return s;
      });
}

int RunSignal(const Args& args) {
  cxxopts::Options opts("baton signal",
                        "Send a signal to a running job's ranks (mpirun in mpi mode). USR1 "
                        "asks a job using libbaton_checkpoint to save and exit.");
  opts.add_options()("s,signal", "USR1 or USR2",
                     cxxopts::value<std::string>()->default_value("USR1"));
  return ForEachJob(
      opts, args, "signal", [](Client& client, const cxxopts::ParseResult& r, uint64_t id) {
        std::string name = r["signal"].as<std::string>();
        if (name.rfind("SIG", 0) == 0) name = name.substr(3);
        std::optional<int> sig = JobSignalByName(name);
        if (!sig) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              "--signal " + name + ": only USR1 or USR2 (use cancel to stop)");
        }
        v1::SignalRequest req;
        req.set_job_id(id);
        req.set_signal(*sig);
        v1::SignalResponse resp;
        auto ctx = client.Context();
        grpc::Status s = client.stub()->Signal(ctx.get(), req, &resp);
        if (!s.ok()) return s;
        if (r.count("json")) {
          std::cout << "{\"jobId\":\"" << id << "\",\"signal\":\"SIG" << name << "\""
                    << ArrayJson(resp.has_array(), resp.array()) << "}\n";
        } else if (resp.has_array()) {
          std::cout << "Sent SIG" << name << " to " << resp.array().tasks()
                    << " running task(s) of array " << id << "\n";
        } else {
          std::cout << "Sent SIG" << name << " to job " << id << "\n";
        }
        return s;
      });
}

}  // namespace baton::cli
