// baton capacity --services FILE --plan FILE: sizes the inference pool, the shared
// training pool, quotas and lending limits (capacity.h; docs/capacity.md). Local: it
// talks to no coordinator. Writes the policy fragment and a baton-sim cluster file on
// request, so that the plan can be tried on a trace before it is bought.
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
  return kOk;
}

}  // namespace baton::cli
