#include <signal.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "launcher/agent/isolation/cgroup_driver.h"

namespace baton::cgroup_util {

std::map<std::string, uint64_t> ParseKeyValues(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string key;
  uint64_t value;
  while (in >> key >> value) out[key] = value;
  return out;
}

uint64_t ParseU64(const std::string& text) {
  try {
    return std::stoull(text);
  } catch (...) {
    return 0;
  }
}

absl::Status KillUntilEmpty(CgroupFs* fs, const std::string& procs) {
  for (int round = 0; round < 50; ++round) {
    auto text = fs->Read(procs);
    if (!text.ok())
      return text.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus() : text.status();
    std::vector<pid_t> pids = ParsePids(*text);
    if (pids.empty()) return absl::OkStatus();
    for (pid_t p : pids) kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(round < 10 ? 1 : 10));
  }
  return absl::DeadlineExceededError("processes in " + procs + " survive SIGKILL");
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool IsAttemptName(const std::string& name) {
  unsigned long long job = 0;
  unsigned attempt = 0;
  char tail = 0;
  return std::sscanf(name.c_str(), "job-%llu-a%u%c", &job, &attempt, &tail) == 2;
}

std::vector<std::string> PathPrefixes(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(path);
  std::string part, acc;
  while (std::getline(in, part, '/')) {
    if (part.empty()) continue;
    acc += (acc.empty() ? "" : "/") + part;
    out.push_back(acc);
  }
  return out;
}

}  // namespace baton::cgroup_util
