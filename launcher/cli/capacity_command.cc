// baton capacity --services FILE --plan FILE: sizes the inference pool, the shared
// training pool, quotas and lending limits (capacity.h; docs/capacity.md). Local: it
// talks to no coordinator. Writes the policy fragment and a baton-sim cluster file on
// request, so that the plan can be tried on a trace before it is bought.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "launcher/cli/capacity.h"
#include "launcher/cli/client.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/options.h"

namespace baton::cli {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

// baton-sim next to this binary, else the one on PATH.
std::string SimBinary() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / "baton-sim")) {
    return (self.parent_path() / "baton-sim").string();
  }
  return "baton-sim";
}

// Runs `argv` with stdout into `out_path`; its exit code, or -1 when it could not run.
int RunTo(const std::vector<std::string>& argv, const std::string& out_path) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::FILE* out = std::fopen(out_path.c_str(), "w");
    if (!out || dup2(fileno(out), STDOUT_FILENO) < 0) _exit(127);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Replays `trace` on the plan with baton-sim and judges the rules of thumb on it.
int Check(const CapacityInput& in, const CapacityPlan& plan, const std::string& trace,
          const std::string& sim) {
  char dir_template[] = "/tmp/baton-capacity-XXXXXX";
  if (!mkdtemp(dir_template)) return kError;
  std::string dir = dir_template, policy = dir + "/policy.yaml", cluster = dir + "/cluster.yaml",
              json = dir + "/summary.json";
  int code = kError;
  if (WriteFile(policy, PlanPolicyYaml(in, plan)) &&
      WriteFile(cluster, PlanClusterYaml(in, plan))) {
    int rc = RunTo({sim, "--cluster", cluster, "--trace", trace, "--policy", policy, "--json",
                    "--big-gang-gpus", std::to_string(2 * in.gpus_per_node)},
                   json);
    std::string text;
    nlohmann::json summary;
    if (rc == 0 && ReadFile(json, &text)) {
      summary = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    }
    if (summary.is_object()) {
      std::cout << "\n" << CheckTable(CheckPlan(in, plan, summary));
      code = kOk;
    } else {
      std::cerr << "baton capacity: " << sim << " on " << trace << " failed (exit " << rc
                << "); run it by hand with the files in " << dir << "\n";
      return kUsage;
    }
  }
  std::filesystem::remove_all(dir);
  return code;
}

}  // namespace

int RunCapacity(const Args& args) {
  cxxopts::Options opts("baton capacity",
                        "Size the inference pool, the shared training pool, quotas and lending "
                        "limits from the services and the training plan (docs/capacity.md). "
                        "Prints a table and the policy YAML for the coordinator.");
  opts.add_options()("services", "services YAML (weights, KV cache, QPS, replicas)",
                     cxxopts::value<std::string>())(
      "plan", "training plan YAML (GPU-days, deadlines, guarantee)", cxxopts::value<std::string>())(
      "policy-out", "write the policy fragment here", cxxopts::value<std::string>())(
      "cluster-out", "write a baton-sim cluster file of the plan here",
      cxxopts::value<std::string>())(
      "check", "replay this trace on the plan with baton-sim and say which rules held",
      cxxopts::value<std::string>())("sim", "the baton-sim binary (default: next to baton)",
                                     cxxopts::value<std::string>())("h,help", "this help");
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  if (!r->count("services") && !r->count("plan")) {
    std::cerr << "baton capacity: give --services, --plan or both\n";
    return kUsage;
  }
  std::string files[2], sources[2];
  const char* flags[2] = {"services", "plan"};
  for (int i = 0; i < 2; ++i) {
    if (!r->count(flags[i])) continue;
    sources[i] = (*r)[flags[i]].as<std::string>();
    if (!ReadFile(sources[i], &files[i])) {
      std::cerr << "baton capacity: cannot read " << sources[i] << "\n";
      return kUsage;
    }
  }
  absl::StatusOr<CapacityInput> in = ParseCapacityInput(files[0], sources[0], files[1], sources[1]);
  absl::StatusOr<CapacityPlan> plan = in.ok() ? PlanCapacity(*in) : in.status();
  if (!plan.ok()) {
    std::cerr << "baton capacity: " << plan.status().message() << "\n";
    return kUsage;
  }
  std::string policy = PlanPolicyYaml(*in, *plan);
  std::cout << PlanTable(*in, *plan) << "\n" << policy;
  for (auto [flag, text] :
       {std::pair{"policy-out", policy}, {"cluster-out", PlanClusterYaml(*in, *plan)}}) {
    if (!r->count(flag)) continue;
    std::string path = (*r)[flag].as<std::string>();
    if (!WriteFile(path, text)) {
      std::cerr << "baton capacity: cannot write " << path << "\n";
      return kError;
    }
  }
  if (r->count("check")) {
    return Check(*in, *plan, (*r)["check"].as<std::string>(),
                 r->count("sim") ? (*r)["sim"].as<std::string>() : SimBinary());
  }
  return kOk;
}

}  // namespace baton::cli
