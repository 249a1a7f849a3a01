#include "bench/isolation_cluster.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace baton::bench {

using nlohmann::json;
using testing::ReadFile;
using testing::Subprocess;
namespace fs = std::filesystem;

double Num(const json& j, const std::string& key, double def) {
  if (!j.is_object() || !j.contains(key)) return def;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::atof(v.get<std::string>().c_str());
  return def;
}

std::string Str(const json& j, const std::string& key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

int Sh(const std::string& cmd) { return testing::RunProcess({"/bin/sh", "-c", cmd}, {}).exit_code; }

std::string Bin(const std::string& name) {
  return fs::read_symlink("/proc/self/exe").parent_path() / name;
}

std::optional<Cpus> Cpus::OfThisMachine() {
  unsigned n = std::thread::hardware_concurrency();
  if (n < 2) return std::nullopt;
  std::string top = std::to_string(n - 1);
  return Cpus{top, n == 2 ? "0" : "0-" + std::to_string(n - 2), "0-" + top};
}

std::vector<std::string> Pinned(const std::string& cpus, std::vector<std::string> cmd) {
  cmd.insert(cmd.begin(), {"/usr/bin/taskset", "-c", cpus});
  return cmd;
}

bool PinSelf(const std::string& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::istringstream ranges(cpus);  // "0-2,5"
  for (std::string range; std::getline(ranges, range, ',');) {
    size_t dash = range.find('-');
    int lo = std::atoi(range.c_str());
    int hi = dash == std::string::npos ? lo : std::atoi(range.c_str() + dash + 1);
    for (int cpu = lo; cpu <= hi; ++cpu) CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

namespace {

std::string CgroupParent() { return "baton-bench-" + std::to_string(getpid()); }

}  // namespace

Cluster::Cluster(const std::string& dir, const std::string& node, const std::string& nic,
                 testing::TestSecurity* security, const std::vector<std::string>& agent_flags)
    : dir_(dir), node_(node), security_(security) {
  fs::create_directories(dir);
  std::ofstream(dir + "/policy.yaml") << testing::BenchPolicy();
  std::string ready = dir + "/coordinator.addr";
  std::vector<std::string> coordinator = {
      Bin("baton-coordinator"), "--listen", "127.0.0.1:0", "--data-dir", dir + "/coordinator",
      "--ready-file",           ready,      "--log-level", "warn",       "--policy",
      dir + "/policy.yaml"};
  for (auto& f : security_->CoordinatorFlags()) coordinator.push_back(f);
  procs_.push_back(std::make_unique<Subprocess>(coordinator, std::map<std::string, std::string>{},
                                                dir + "/coordinator"));
  testing::WaitFor([&] { return !ReadFile(ready).empty(); }, std::chrono::seconds(20));
  address_ = ReadFile(ready).substr(0, ReadFile(ready).find('\n'));
  // The agent's defaults, but for the NIC it caps (a veth has no rate of its own).
  std::vector<std::string> agent = {Bin("baton-agent"),
                                    "--name",
                                    node_,
                                    "--coordinator",
                                    address_,
                                    "--data-dir",
                                    dir + "/agent",
                                    "--isolation",
                                    "auto",
                                    "--cgroup-parent",
                                    CgroupParent(),
                                    "--nic",
                                    nic,
                                    "--nic-rate",
                                    "1gbit",
                                    "--nvml",
                                    "",
                                    "--log-level",
                                    "warn"};
  for (auto& f : security_->AgentFlags(node_, {"IP:127.0.0.1"})) agent.push_back(f);
  agent.insert(agent.end(), agent_flags.begin(), agent_flags.end());
  procs_.push_back(
      std::make_unique<Subprocess>(agent, std::map<std::string, std::string>{}, dir + "/agent"));
  ok_ = testing::WaitFor([&] { return Baton({"nodes"}).find(node_) != std::string::npos; },
                         std::chrono::seconds(20));
}

Cluster::~Cluster() {
  for (auto it = procs_.rbegin(); it != procs_.rend(); ++it) {
    (*it)->Signal(SIGTERM);
    (*it)->Wait(std::chrono::seconds(15));
  }
  Sh("nft delete table inet baton_" + node_ + " 2>/dev/null");
  Sh("for d in /sys/fs/cgroup/*/" + CgroupParent() + "; do rmdir \"$d\"; done 2>/dev/null");
}

std::string Cluster::Baton(std::vector<std::string> args) {
  args.insert(args.begin(), Bin("baton"));
  auto env = security_->ClientEnv();  // as root: the admin, member of tenant bench
  env["BATON_COORDINATOR"] = address_;
  auto r = testing::RunProcess(args, env);
  return r.exit_code == 0 ? r.out : "";
}

uint64_t Cluster::Submit(const std::string& cls, const std::string& name,
                         const std::vector<std::string>& command) {
  std::vector<std::string> args = {"submit", "-q",        "-p",    cls,      "--cpus", "1", "--mem",
                                   "512Mi",  "--restart", "never", "--name", name,     "--"};
  args.insert(args.end(), command.begin(), command.end());
  std::string out = Baton(args);
  return out.empty() ? 0 : std::stoull(out);
}

json Cluster::Status(uint64_t job) {
  std::string out = Baton({"status", std::to_string(job), "--json"});
  return out.empty() ? json() : json::parse(out, nullptr, false);
}

bool Cluster::WaitState(uint64_t job, const std::string& state, int seconds, int quiet_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(quiet_ms));
  return testing::WaitFor([&] { return Str(Status(job), "state") == state; },
                          std::chrono::seconds(seconds));
}

json Cluster::WaitOutput(uint64_t job, const std::string& key, int seconds) {
  json out;
  bool done = testing::WaitFor(
      [&] {
        out = Output(job);
        return out.is_object() && out.contains(key);
      },
      std::chrono::seconds(seconds));
  if (!done || !WaitState(job, "JOB_STATE_SUCCEEDED", seconds)) return json();
  return out;
}

json Cluster::Limits(uint64_t job) {
  json s = Status(job);
  if (!s.is_object() || !s.contains("attempts") || s["attempts"].empty()) return json();
  json a = s["attempts"].back();
  if (!a.contains("isolation") || a["isolation"].empty()) return json();
  return a["isolation"][0]["limits"];
}

json Cluster::Output(uint64_t job) {
  // The agent prefixes every line with its rank ("[rank 0] "): take the text back out.
  std::string raw = ReadFile(dir_ + "/agent/jobs/" + std::to_string(job) + "/1/output.log");
  std::string log;
  std::istringstream lines(raw);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[rank ", 0) == 0 && line.find("] ") != std::string::npos) {
      line = line.substr(line.find("] ") + 2);
    }
    log += line + "\n";
  }
  json whole = json::parse(log, nullptr, false);
  if (!whole.is_discarded()) return whole;
  size_t end = log.find_last_not_of('\n');
  if (end == std::string::npos) return json();
  size_t start = log.rfind('\n', end);
  return json::parse(log.substr(start == std::string::npos ? 0 : start + 1, end + 1), nullptr,
                     false);
}

}  // namespace baton::bench
