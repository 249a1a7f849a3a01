#include "launcher/agent/exec_client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "proto/agent.grpc.pb.h"
#include "proto/rpc_util.h"
#include "proto/tls.h"

namespace baton {
namespace {

constexpr int kSshFailure = 255;

int Fail(const std::string& why) {
  std::fprintf(stderr, "baton-agent exec: %s\n", why.c_str());
  return kSshFailure;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Target {
  std::string node;     // whose certificate the agent there must hold
  std::string address;  // its agent service, host:port
};

// "host=node@addr,host=node@addr" -> map.
std::map<std::string, Target> ParseHosts(const std::string& text) {
  std::map<std::string, Target> hosts;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t eq = item.find('='), at = item.find('@');
    if (eq != std::string::npos && at != std::string::npos && at > eq) {
      hosts[item.substr(0, eq)] = {item.substr(eq + 1, at - eq - 1), item.substr(at + 1)};
    }
  }
  return hosts;
}

template <typename T>
bool ParseNumber(const std::string& s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

int RunExecClient(const std::vector<std::string>& args) {
  if (args.size() < 2) return Fail("usage: baton-agent exec HOST COMMAND...");
  v1::ExecRequest req;
  uint64_t job = 0;
  uint32_t attempt = 0;
  if (!ParseNumber(Env("BATON_JOB_ID"), &job) || !ParseNumber(Env("BATON_ATTEMPT"), &attempt)) {
    return Fail("BATON_JOB_ID and BATON_ATTEMPT must name the attempt (run me from a job)");
  }
  req.set_job_id(job);
  req.set_attempt(attempt);
  req.set_secret(Env("BATON_EXEC_SECRET"));
  auto hosts = ParseHosts(Env("BATON_EXEC_HOSTS"));
  auto target = hosts.find(args[0]);
  if (target == hosts.end()) return Fail(args[0] + " is not a node of this job");
  std::string command;
  for (size_t i = 1; i < args.size(); ++i) command += (i > 1 ? " " : "") + args[i];
  req.set_command(command);

  TlsOptions tls_options;
  tls_options.insecure = Env("BATON_EXEC_INSECURE") == "1";
  tls_options.ca_file = Env("BATON_EXEC_CA");
  auto tls = LoadTls(tls_options, /*need_cert=*/false);
  if (!tls.ok()) return Fail("BATON_EXEC_CA: " + std::string(tls.status().message()));
  auto creds = ChannelCredentials(*tls, target->second.address);
  if (!creds.ok()) return Fail(std::string(creds.status().message()));
  grpc::ChannelArguments channel_args;
  VerifyServerAs(target->second.node, &channel_args);  // the secret goes to that node only
  SetClientMessageLimits(&channel_args);
  auto stub =
      v1::Agent::NewStub(grpc::CreateCustomChannel(target->second.address, *creds, channel_args));
  grpc::ClientContext ctx;
  auto reader = stub->Exec(&ctx, req);
  v1::ExecOutput out;
  int code = kSshFailure;
  bool started = false, exited = false;
  while (reader->Read(&out)) {
    started |= out.started();
    if (!out.stdout().empty()) WriteAll(1, out.stdout());
    if (!out.stderr().empty()) WriteAll(2, out.stderr());
    if (out.exited()) {
      exited = true;
      code = out.term_signal() ? 128 + out.term_signal() : out.exit_code();
    }
  }
  grpc::Status s = reader->Finish();
  if (started && !exited && !s.ok()) {
    // The agent went away under a running daemon (it restarts and re-adopts it). mpirun
    // takes a failed "ssh" for a failed daemon and aborts the job: this one did not fail,
    // and mpirun hears of the daemon's end from the daemon's own connection.
    std::fprintf(stderr, "baton-agent exec: lost the agent on %s; the daemon runs on\n",
                 args[0].c_str());
    return 0;
  }
  if (!s.ok()) {
    return Fail(args[0] + " (" + target->second.node + " at " + target->second.address +
                "): " + s.error_message());
  }
  return code;
}

}  // namespace baton
