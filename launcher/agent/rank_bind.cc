#include "launcher/agent/rank_bind.h"

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace baton {
namespace {

constexpr size_t kMaxNodes = 1024;            // the memory policy's node mask, in bits
constexpr uint64_t kMaxNumber = 999'999'999;  // a CPU, node or rank

}  // namespace

std::string JoinNumberList(const std::vector<uint32_t>& v) {
  std::string out;
  for (uint32_t n : v) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

bool ParseNumberList(std::string_view text, uint64_t max, std::vector<uint32_t>* out) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v > max) {
      return false;
    }
    out->push_back(static_cast<uint32_t>(v));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return false;  // a trailing comma
  }
  return true;
}

int BindThisProcess(const ProcessBinding& b) {
  cpu_set_t set;
  if (b.cpus.empty()) {
    std::memset(&set, 0xff, sizeof set);
    // Every CPU: the kernel keeps those of the process's cpuset, nothing to refuse.
    (void)sched_setaffinity(0, sizeof set, &set);
  } else {
    CPU_ZERO(&set);
    for (uint32_t c : b.cpus) {
      if (c < CPU_SETSIZE) CPU_SET(c, &set);
    }
    if (sched_setaffinity(0, sizeof set, &set) != 0) return 1;
  }
  if (b.mems.empty()) return 0;
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  constexpr size_t kBits = 8 * sizeof(unsigned long);
  for (uint32_t n : b.mems) {
    if (n < kMaxNodes) mask[n / kBits] |= 1UL << (n % kBits);
  }
  // maxnode counts one past the last bit the kernel reads.
  if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, kMaxNodes + 1) != 0) return 2;
  return 0;
}

std::string EncodeBindings(const std::vector<ProcessBinding>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ";" : "") + JoinNumberList(ranks[i].cpus) + "/" + JoinNumberList(ranks[i].mems);
  }
  return out;
}

std::optional<ProcessBinding> DecodeBinding(const std::string& text, uint32_t local_rank) {
  size_t at = 0;
  for (uint32_t r = 0; r < local_rank; ++r) {
    at = text.find(';', at);
    if (at == std::string::npos) return std::nullopt;
    ++at;
  }
  std::string entry = text.substr(at, text.find(';', at) - at);
  size_t slash = entry.find('/');
  if (text.empty() || slash == std::string::npos) return std::nullopt;
  ProcessBinding b;
  if (!ParseNumberList(std::string_view(entry).substr(0, slash), kMaxNumber, &b.cpus) ||
      !ParseNumberList(std::string_view(entry).substr(slash + 1), kMaxNumber, &b.mems)) {
    return std::nullopt;
  }
  return b;
}

int RunBoundRank(const std::vector<std::string>& args) {
  std::vector<std::string> cmd = args;
  if (!cmd.empty() && cmd[0] == "--") cmd.erase(cmd.begin());
  if (cmd.empty()) {
    std::fprintf(stderr, "baton-exec %s: no command\n", kBindRankFlag);
    return 127;
  }
  const char* plan = std::getenv(kBindingsEnv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  std::vector<uint32_t> local;
  if (plan && rank && ParseNumberList(rank, kMaxNumber, &local) && local.size() == 1) {
    std::optional<ProcessBinding> b = DecodeBinding(plan, local[0]);
    int step = b ? BindThisProcess(*b) : 0;
    if (!b || step != 0) {
      std::fprintf(stderr, "baton-exec %s: local rank %u runs unbound: %s\n", kBindRankFlag,
                   local[0], !b ? "no binding for it" : std::strerror(errno));
    }
  }
  std::vector<char*> argv;
  for (auto& a : cmd) argv.push_back(a.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "baton-exec %s: cannot run %s: %s\n", kBindRankFlag, argv[0],
               std::strerror(errno));
  return 127;
}

std::vector<std::string> BindRankPrefix() {
  // $BATON_BIND_EXEC is unquoted: it may be `<baton-agent> exec`, two words.
  return {"/bin/sh", "-c",
          std::string("if [ -n \"$") + kBindExecEnv + "\" ]; then exec $" + kBindExecEnv + " " +
              kBindRankFlag + " -- \"$@\"; fi; exec \"$@\"",
          "baton-rank"};
}

}  // namespace baton
