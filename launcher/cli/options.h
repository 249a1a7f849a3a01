// Flag parsing shared by the subcommands: the common flags every command takes, and
// running cxxopts so that its exceptions become one-line usage errors. Single-threaded.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cxxopts.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/client.h"
#include "launcher/cli/output.h"

namespace baton::cli {

// Adds --coordinator, --timeout, --json and --help to `opts`.
void AddCommonFlags(cxxopts::Options& opts);

// Adds -o/--output and --no-headers to a command that lists (output.h).
void AddOutputFlags(cxxopts::Options& opts);

// Parses; on error prints "baton <cmd>: <message>" and returns nullopt with *code set
// (kUsage, or kOk after --help). The output flags, where the command has them, are
// checked here (before any call is made).
std::optional<cxxopts::ParseResult> Parse(cxxopts::Options& opts,
                                          const std::vector<std::string>& args, int* code);

// The output format of a parsed command line: --json, and -o and --no-headers where the
// command has them. Parse has checked them; an invalid combination reads as the default.
OutputOptions Output(const cxxopts::ParseResult& r);

// Environment defaults overridden by --coordinator and --timeout.
std::optional<ConnectOptions> Connection(const cxxopts::ParseResult& r, int* code);

// A job named on the command line: "17" (a job, or an array: all of its tasks) or "17_5"
// (task 5 of array 17).
struct JobRef {
  uint64_t id = 0;
  std::optional<uint32_t> task;
  std::string text;  // as given
};
absl::StatusOr<JobRef> ParseJobRef(const std::string& text);
// The job `ref` names: a task's id from its array's record (GetArray); NotFound when the
// array has no such index.
absl::StatusOr<uint64_t> ResolveJobRef(Client& client, const JobRef& ref);

// A point in time on the command line (usage, history): a duration before `now_ms` ("30d",
// "12h"), a UTC date ("2026-11-01", its midnight) or an RFC 3339 time. InvalidArgument
// naming the accepted forms.
absl::StatusOr<int64_t> ParseWhen(const std::string& text, int64_t now_ms);

// The positional job ids, parsed; prints the error and sets *code on a bad one.
std::optional<std::vector<JobRef>> JobIds(const cxxopts::ParseResult& r, const char* cmd,
                                          int* code);

// The shape of every per-job command: adds the positional JOB... argument, parses, checks
// the ids, connects, and calls `each` for every id. A failed call is reported as
// "baton: <cmd> <id>: <message>"; the exit code is the last failure's, else kOk.
using PerJob =
    std::function<grpc::Status(Client& client, const cxxopts::ParseResult& r, uint64_t id)>;
int ForEachJob(cxxopts::Options& opts, const std::vector<std::string>& args, const char* cmd,
               const PerJob& each);

// The shape of a command that makes one call: adds the common flags, parses, connects and
// runs `call`, which makes its RPC and prints. A failed call is reported as
// "baton: <cmd>: <message>" with its exit code.
using OneCall = std::function<grpc::Status(Client& client, const cxxopts::ParseResult& r)>;
int RunOneCall(cxxopts::Options& opts, const std::vector<std::string>& args, const char* cmd,
               const OneCall& call);

}  // namespace baton::cli
