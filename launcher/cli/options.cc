#include "launcher/cli/options.h"

#include <charconv>
#include <iostream>

#include "absl/time/time.h"
#include "common/ids.h"
#include "common/resources.h"
#include "coordinator/arrays.h"

namespace baton::cli {

void AddCommonFlags(cxxopts::Options& opts) {
  opts.add_options("Common")("coordinator", "coordinator host:port (env BATON_COORDINATOR)",
                             cxxopts::value<std::string>())(
      "timeout", "deadline for each call (e.g. 10s)",
      cxxopts::value<std::string>()->default_value("10s"))(
      "json", "machine-readable output: proto3 JSON, one object per line")(
      "insecure", "plaintext to a coordinator on loopback (development; env BATON_INSECURE=1)")(
      "h,help", "show this help");
}

void AddOutputFlags(cxxopts::Options& opts) {
  opts.add_options("Output")(
      "o,output", std::string("output format: ") + kOutputValues + " (default: a table)",
      cxxopts::value<std::string>())("no-headers", "tables without their header row");
}

namespace {

// -o and --no-headers exist only on the commands that list; --json on every command.
absl::StatusOr<OutputOptions> OutputOf(const cxxopts::ParseResult& r) {
  std::string output = r.count("output") ? r["output"].as<std::string>() : "";
  return ParseOutputOptions(r.count("output") ? &output : nullptr, r.count("json") > 0,
                            r.count("no-headers") > 0);
}

}  // namespace

OutputOptions Output(const cxxopts::ParseResult& r) {
  return OutputOf(r).value_or(OutputOptions{});
}

std::optional<cxxopts::ParseResult> Parse(cxxopts::Options& opts,
                                          const std::vector<std::string>& args, int* code) {
  std::vector<const char*> argv = {opts.program().c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    auto r = opts.parse(static_cast<int>(argv.size()), argv.data());
    if (r.count("help")) {
      std::cout << opts.help() << "\n";
      *code = kOk;
      return std::nullopt;
    }
    if (auto output = OutputOf(r); !output.ok()) {
      std::cerr << opts.program() << ": " << output.status().message() << "\n";
      *code = kUsage;
      return std::nullopt;
    }
    return r;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << opts.program() << ": " << e.what() << " (see --help)\n";
    *code = kUsage;
    return std::nullopt;
  }
}

std::optional<ConnectOptions> Connection(const cxxopts::ParseResult& r, int* code) {
  ConnectOptions o = ConnectOptionsFromEnv();
  if (r.count("coordinator")) o.coordinator = r["coordinator"].as<std::string>();
  if (r.count("insecure")) o.insecure = true;
  auto t = ParseDurationSeconds(r["timeout"].as<std::string>());
  if (!t.ok() || *t == 0) {
    std::cerr << "baton: --timeout: expected a positive duration like 10s\n";
    *code = kUsage;
    return std::nullopt;
  }
  o.timeout = std::chrono::seconds(*t);
  return o;
}

absl::StatusOr<JobRef> ParseJobRef(const std::string& text) {
  JobRef ref;
  ref.text = text;
  const size_t us = text.find('_');
  absl::StatusOr<uint64_t> id = ParseJobId(text.substr(0, us));
  if (!id.ok()) return id.status();
  ref.id = *id;
  if (us != std::string::npos) {
    const std::string index = text.substr(us + 1);
    uint32_t n = 0;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), n);
    if (index.empty() || ec != std::errc() || end != index.data() + index.size()) {
      return absl::InvalidArgumentError("invalid job id '" + text +
                                        "': a task of an array is ARRAY_INDEX (17_5)");
    }
    ref.task = n;
  }
  return ref;
}

absl::StatusOr<uint64_t> ResolveJobRef(Client& client, const JobRef& ref) {
  if (!ref.task) return ref.id;
  v1::GetRequest req;
  req.set_job_id(ref.id);
  v1::JobArray array;
  auto ctx = client.Context();
  grpc::Status s = client.stub()->GetArray(ctx.get(), req, &array);
  if (!s.ok()) return FromGrpc(s);
  std::optional<uint32_t> position = arrays::PositionOf(array.spec().array(), *ref.task);
  if (!position) {
    return absl::NotFoundError("array " + std::to_string(ref.id) + " has no task " +
                               std::to_string(*ref.task) + " (its tasks: " + arrays::Label(array) +
                               ")");
  }
  return arrays::TaskJobId(ref.id, *position);
}

std::optional<std::vector<JobRef>> JobIds(const cxxopts::ParseResult& r, const char* cmd,
                                          int* code) {
  std::vector<JobRef> ids;
  if (r.count("job")) {
    for (const auto& text : r["job"].as<std::vector<std::string>>()) {
      auto id = ParseJobRef(text);
      if (!id.ok()) {
        std::cerr << "baton " << cmd << ": " << id.status().message() << "\n";
        *code = kUsage;
        return std::nullopt;
      }
      ids.push_back(*id);
    }
  }
  if (ids.empty()) {
    std::cerr << "baton " << cmd << ": give a job id (see --help)\n";
    *code = kUsage;
    return std::nullopt;
  }
  return ids;
}

int ForEachJob(cxxopts::Options& opts, const std::vector<std::string>& args, const char* cmd,
               const PerJob& each) {
  opts.add_options()("job", "job ids", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"job"});
  opts.positional_help("JOB...");
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  auto ids = JobIds(*r, cmd, &code);
  if (!ids) return code;
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  int worst = kOk;
  for (const JobRef& ref : *ids) {
    absl::StatusOr<uint64_t> id = ResolveJobRef(client, ref);
    grpc::Status s = id.ok() ? each(client, *r, *id) : ToGrpc(id.status());
    if (!s.ok()) worst = ReportError(std::string(cmd) + " " + ref.text, s, conn->coordinator);
  }
  return worst;
}

int RunOneCall(cxxopts::Options& opts, const std::vector<std::string>& args, const char* cmd,
               const OneCall& call) {
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  grpc::Status s = call(client, *r);
  return s.ok() ? kOk : ReportError(cmd, s, conn->coordinator);
}

absl::StatusOr<int64_t> ParseWhen(const std::string& text, int64_t now_ms) {
  if (auto ago = ParseDuration(text); ago.ok() && *ago >= absl::ZeroDuration()) {
    return now_ms - absl::ToInt64Milliseconds(*ago);
  }
  absl::Time t;
  std::string err;
  if (absl::ParseTime("%Y-%m-%d", text, absl::UTCTimeZone(), &t, &err) ||
      absl::ParseTime(absl::RFC3339_full, text, absl::UTCTimeZone(), &t, &err)) {
    return absl::ToUnixMillis(t);
  }
  return absl::InvalidArgumentError("'" + text +
                                    "': expected a duration before now (30d, 12h), a UTC date "
                                    "(2026-11-01) or an RFC 3339 time (2026-11-01T08:00:00Z)");
}

}  // namespace baton::cli
