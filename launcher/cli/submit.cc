// baton submit: build a JobSpec from -f FILE and/or flags, submit it, and with --wait
// follow it to the end (progress on stderr) and exit with the job's exit code (an array:
// every task to its end; 0 when all succeeded, 1 when any failed, else 130).
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/ids.h"
#include "common/resources.h"
#include "coordinator/arrays.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"
#include "launcher/cli/spec_input.h"

namespace baton::cli {
namespace {

// Scalar flags and the spec field each sets (same keys as the YAML file).
constexpr std::pair<const char*, const char*> kScalarFlags[] = {
    {"name", "name"},
    {"tenant", "tenant"},
    {"class", "priority_class"},
    {"nodes", "nodes"},
    {"ranks-per-node", "ranks_per_node"},
    {"gpus", "gpus_per_node"},
    {"cpus", "cpus_per_node"},
    {"mem", "memory_per_node"},
    {"gpu-mem", "gpu_memory"},
    {"gpu-share", "gpu_share"},
    {"net-cap", "network_cap"},
    {"gpu-model", "gpu_model"},
    {"mig", "mig_profile"},
    {"mode", "launch_mode"},
    {"restart", "restart_policy"},
    {"max-restarts", "max_restarts"},
    {"pool", "pool"},
    {"workdir", "working_dir"},
    {"checkpoint-dir", "checkpoint_dir"},
    {"grace", "grace"},
    {"max-runtime", "max_runtime"},
    {"topology", "topology"},
    {"after", "after"},
    {"array", "array"},
};

cxxopts::Options SubmitOptions() {
  cxxopts::Options opts("baton submit",
                        "Submit a job: baton submit [flags] -- COMMAND [ARGS...]\n"
                        "Flags override the fields of -f FILE.");
  opts.add_options("Job")("f,file", "job spec YAML file", cxxopts::value<std::string>())(
      "name", "job name", cxxopts::value<std::string>())("tenant", "team (default: BATON_TENANT)",
                                                         cxxopts::value<std::string>())(
      "p,class", "priority class (default training)", cxxopts::value<std::string>())(
      "N,nodes", "nodes in the gang", cxxopts::value<std::string>())(
      "n,ranks-per-node", "processes per node", cxxopts::value<std::string>())(
      "g,gpus", "GPUs per node (0: CPU only)", cxxopts::value<std::string>())(
      "cpus", "CPUs per node (2, 0.5, 500m)", cxxopts::value<std::string>())(
      "mem", "memory per node (16Gi)", cxxopts::value<std::string>())(
      "gpu-mem", "GPU memory per GPU (20Gi)", cxxopts::value<std::string>())(
      "gpu-share", "an MPS share of one GPU (25%), with --gpu-mem", cxxopts::value<std::string>())(
      "net-cap", "egress cap per node (1gbit)", cxxopts::value<std::string>())(
      "gpu-model", "GPU model", cxxopts::value<std::string>())("mig", "MIG profile (1g.18gb)",
                                                               cxxopts::value<std::string>())(
      "mode", "launch mode: direct or mpi", cxxopts::value<std::string>())(
      "restart", "never, on-failure or always", cxxopts::value<std::string>())(
      "max-restarts", "failure retries", cxxopts::value<std::string>())(
      "pool", "node pool", cxxopts::value<std::string>())(
      "selector", "node label key=value (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "toleration", "key[=value][:effect] (repeatable)",
      cxxopts::value<std::vector<std::string>>())("e,env", "NAME=value for every rank (repeatable)",
                                                  cxxopts::value<std::vector<std::string>>())(
      "workdir", "working directory on the nodes", cxxopts::value<std::string>())(
      "checkpoint-dir", "checkpoint directory every node sees", cxxopts::value<std::string>())(
      "grace", "time to checkpoint and exit when stopped (30s)", cxxopts::value<std::string>())(
      "max-runtime", "kill after this long (2h)", cxxopts::value<std::string>())(
      "topology", "keep the gang in one switch domain: LEVEL[:required][@WAIT] (leaf:required@10m)",
      cxxopts::value<std::string>())(
      "after", "start only after other jobs end: ok:17 (succeeded), any:18, notok:19 (failed)",
      cxxopts::value<std::string>())(
      "array", "an array of tasks FIRST-LAST[:STEP][%MAX_RUNNING] (0-63%8); %A, %a in names",
      cxxopts::value<std::string>())("hold",
                                     "submit it held: it waits in line until baton release")(
      "w,wait",
      "follow the job to its end and exit with its exit code (an array: all its tasks; 0 when "
      "every one succeeded, 1 when any failed, 130 when any was cancelled)")(
      "q,quiet", "print only the job id")("parsable", "print only the job id (as sbatch does)");
  AddCommonFlags(opts);
  return opts;
}

absl::StatusOr<v1::JobSpec> BuildSpec(const cxxopts::ParseResult& r,
                                      const std::vector<std::string>& command) {
  v1::JobSpec spec;
  if (r.count("file")) {
    std::string path = r["file"].as<std::string>();
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto from_file = SpecFromYaml(ss.str(), path);
    if (!from_file.ok()) return from_file.status();
    spec = std::move(*from_file);
  }
  for (const auto& [flag, field] : kScalarFlags) {
    if (!r.count(flag)) continue;
    absl::Status s =
        SetSpecField(field, r[flag].as<std::string>(), std::string("--") + flag, &spec);
    if (!s.ok()) return s;
  }
  auto list = [&](const char* flag) {
    return r.count(flag) ? r[flag].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  for (const auto& kv : list("selector")) {
    if (auto s = AddKeyValue(kv, "--selector", spec.mutable_node_selector()); !s.ok()) return s;
  }
  for (const auto& kv : list("env")) {
    if (auto s = AddKeyValue(kv, "--env", spec.mutable_env()); !s.ok()) return s;
  }
  for (const auto& t : list("toleration")) {
    auto tol = ParseToleration(t, "--toleration");
    if (!tol.ok()) return tol.status();
    *spec.add_tolerations() = *tol;
  }
  if (spec.tenant().empty()) {
    // A choice among the caller's tenants, checked by the coordinator; not a claim.
    if (const char* t = std::getenv("BATON_TENANT"); t && *t) spec.set_tenant(t);
  }
  if (!command.empty()) {
    spec.clear_command();
    for (const auto& a : command) spec.add_command(a);
  }
  if (spec.command_size() == 0) {
    return absl::InvalidArgumentError(
        "missing command: baton submit [flags] -- COMMAND [ARGS...] (or command: in -f FILE)");
  }
  if (absl::Status s = CheckSpecText(spec, "the job spec"); !s.ok()) return s;
  return spec;
}

int ExitCodeOfJob(const v1::Job& job) {
  switch (job.state()) {
    case v1::JOB_STATE_SUCCEEDED:
      return kOk;
    case v1::JOB_STATE_CANCELLED:
      return kCancelledJob;
    default:
      return job.exit_code() != 0 ? std::min(job.exit_code(), 255) : kError;
  }
}

// Follows the job on the Watch stream, printing each change on stderr; reconnects if
// the stream breaks (a coordinator restart), as a researcher's terminal should.
int Wait(Client& client, uint64_t id, bool json) {
  int64_t start = RealClock::Get()->MonotonicMs();
  std::string last;
  for (int broken = 0;; ++broken) {
    auto ctx = client.Context(/*streaming=*/true);
    v1::WatchRequest req;
    req.set_job_id(id);
    auto reader = client.stub()->Watch(ctx.get(), req);
    v1::Job job;
    while (reader->Read(&job)) {
      std::string line =
          StateName(job.state()) + (job.message().empty() ? "" : ": " + job.message());
      if (line != last) {
        double t = (RealClock::Get()->MonotonicMs() - start) / 1000.0;
        std::fprintf(stderr, "[%7.1fs] job %llu %s\n", t, static_cast<unsigned long long>(id),
                     line.c_str());
        last = line;
      }
      if (IsTerminal(job.state())) {
        if (json) std::cout << ToJson(job) << "\n";
        return ExitCodeOfJob(job);
      }
    }
    grpc::Status s = reader->Finish();
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || broken >= 30) {
      return ReportError("watch job " + std::to_string(id), s, client.options().coordinator);
    }
    std::fprintf(stderr, "baton: lost the coordinator; retrying (job %llu keeps its place)\n",
                 static_cast<unsigned long long>(id));
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

// An array's end as one exit code, as sbatch --wait: any task failed → 1 (their own codes
// are in baton history), else any cancelled → 130, else 0.
int ExitCodeOfArray(const v1::JobArray& array) {
  if (array.failed() > 0) return kError;
  if (array.cancelled() > 0) return kCancelledJob;
  return kOk;
}

// Follows an array to its end, its tasks' counts on stderr as they change. Arrays have no
// Watch stream: their record is read every second (a cheap unary call, as queue's).
int WaitArray(Client& client, uint64_t id, bool json) {
  const int64_t start = RealClock::Get()->MonotonicMs();
  std::string last;
  for (int broken = 0;;) {
    v1::GetRequest req;
    req.set_job_id(id);
    v1::JobArray array;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->GetArray(ctx.get(), req, &array);
    if (!s.ok()) {
      if (s.error_code() != grpc::StatusCode::UNAVAILABLE || ++broken > 30) {
        return ReportError("wait for array " + std::to_string(id), s, client.options().coordinator);
      }
      std::fprintf(stderr, "baton: lost the coordinator; retrying (array %llu keeps its place)\n",
                   static_cast<unsigned long long>(id));
    } else {
      broken = 0;
      std::string line =
          ArrayCounts(array) + (array.message().empty() ? "" : ": " + array.message());
      if (line != last) {
        const double t = (RealClock::Get()->MonotonicMs() - start) / 1000.0;
        std::fprintf(stderr, "[%7.1fs] array %llu %s\n", t, static_cast<unsigned long long>(id),
                     line.c_str());
        last = line;
      }
      if (array.finished_ms() != 0) {
        if (json) std::cout << ToJson(array) << "\n";
        if (array.failed() > 0) {
          std::fprintf(stderr,
                       "baton: %u of %u tasks of array %llu failed (baton history --state failed "
                       "lists them)\n",
                       array.failed(), array.tasks(), static_cast<unsigned long long>(id));
        }
        return ExitCodeOfArray(array);
      }
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace

int RunSubmit(const Args& args) {
  // Everything after "--" is the command, verbatim (it may hold its own flags).
  auto dash = std::find(args.begin(), args.end(), std::string("--"));
  std::vector<std::string> flags(args.begin(), dash);
  std::vector<std::string> command(dash == args.end() ? dash : dash + 1, args.end());
  auto opts = SubmitOptions();
  int code = kOk;
  auto r = Parse(opts, flags, &code);
  if (!r) return code;
  if (!r->unmatched().empty()) {
    std::cerr << "baton submit: unexpected '" << r->unmatched()[0]
              << "': put the command after -- (baton submit [flags] -- COMMAND)\n";
    return kUsage;
  }
  auto spec = BuildSpec(*r, command);
  if (!spec.ok()) {
    std::cerr << "baton submit: " << spec.status().message() << "\n";
    return ExitCodeFor(spec.status().code());
  }
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  v1::SubmitRequest req;
  *req.mutable_spec() = std::move(*spec);
  req.set_idempotency_key(RandomHex128());
  req.set_hold(r->count("hold") > 0);
  v1::SubmitResponse resp;
  grpc::Status s;
  const auto give_up = std::chrono::steady_clock::now() + conn->timeout;
  for (;;) {
    auto ctx = client.Context();
    s = client.stub()->Submit(ctx.get(), req, &resp);
    // With HA replicas, UNAVAILABLE after the request went out is a leader lost with the
    // reply: the same request again, whose key makes it one job (the new leader answers
    // with the first one's id if it was stored).
    if (s.error_code() != grpc::StatusCode::UNAVAILABLE || !client.replicas() ||
        std::chrono::steady_clock::now() >= give_up) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + RandomHex128()[0] % 16 * 20));
  }
  if (!s.ok()) return ReportError("submit", s, conn->coordinator);
  bool json = r->count("json");
  if (json && !r->count("wait")) {
    std::cout << ToJson(resp) << "\n";
  } else if (r->count("quiet") || r->count("parsable")) {
    std::cout << resp.job_id() << "\n";
  } else {
    if (req.spec().has_array()) {
      const v1::ArraySpec& a = req.spec().array();
      const uint32_t n = arrays::TaskCount(a);
      std::cout << "Submitted array " << resp.job_id() << " (" << n << " task"
                << (n == 1 ? "" : "s") << ": " << arrays::TaskLabel(resp.job_id(), a.first())
                << (n > 1 ? " ... " + arrays::TaskLabel(resp.job_id(), arrays::IndexAt(a, n - 1))
                          : "")
                << ")" << (req.hold() ? " (held)" : "") << "\n";
    } else {
      std::cout << "Submitted job " << resp.job_id() << (req.hold() ? " (held)" : "") << "\n";
    }
  }
  std::cout.flush();
  if (!r->count("wait")) return kOk;
  if (req.spec().has_array()) return WaitArray(client, resp.job_id(), json);
  return Wait(client, resp.job_id(), json);
}

}  // namespace baton::cli
