#include "launcher/agent/mps/mps_pools.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "launcher/agent/process.h"

namespace baton {
namespace {

// MPS takes memory limits in whole MiB ("<dev>=<n>M"): rounded up, so a share never gets
// less than it asked.
std::string MiB(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + "M"; }

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError("mkdir " + path + ": " + std::strerror(errno));
  }
  ::chmod(path.c_str(), 0755);  // clients of any uid reach the daemon's pipes
  return absl::OkStatus();
}

}  // namespace

MpsPools::MpsPools(std::string dir, std::unique_ptr<CommandRunner> runner, std::string control)
    : dir_(std::move(dir)), runner_(std::move(runner)), control_(std::move(control)) {}

std::vector<std::string> MpsPools::EnvLocked(const std::string& uuid) const {
  return {"env", "CUDA_VISIBLE_DEVICES=" + uuid, "CUDA_MPS_PIPE_DIRECTORY=" + PipeDir(uuid),
          "CUDA_MPS_LOG_DIRECTORY=" + LogDir(uuid)};
}

bool MpsPools::AliveLocked(const std::string& uuid) const {
  // The control daemon keeps its pid in its pipe directory.
  std::ifstream in(PipeDir(uuid) + "/nvidia-cuda-mps-control.pid");
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return false;
  // A daemon that died but is not reaped yet (it runs detached, so its parent is init,
  // which may reap late) is dead too.
  return ProcessAlive(static_cast<pid_t>(pid));
}

absl::Status MpsPools::StartLocked(const std::string& uuid) {
  for (const std::string& d : {dir_, dir_ + "/" + uuid, PipeDir(uuid), LogDir(uuid)}) {
    if (absl::Status s = MakeDir(d); !s.ok()) return s;
  }
  std::vector<std::string> argv = EnvLocked(uuid);
  argv.push_back(control_);
  argv.push_back("-d");
  auto out = runner_->Run(argv);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::UnavailableError("MPS control daemon for " + uuid + " did not start (exit " +
                                  std::to_string(out->exit_code) + "): " + out->err);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MpsPools::SendLocked(const std::string& uuid,
                                                 const std::string& command) {
  // The control program reads commands on its standard input and answers on its output.
  std::vector<std::string> argv = EnvLocked(uuid);
  argv.insert(argv.end(), {"sh", "-c", "printf '%s\\n' \"$1\" | exec \"$0\"", control_, command});
  auto out = runner_->Run(argv);
  if (!out.ok()) return out.status();
  if (out->exit_code != 0) {
    return absl::UnavailableError("MPS control for " + uuid + ": '" + command + "' failed (exit " +
                                  std::to_string(out->exit_code) + "): " + out->err);
  }
  return out->out;
}

absl::Status MpsPools::SetLimitsLocked(const std::string& uuid, const Pool& pool) {
  uint32_t percent = 0;
  uint64_t memory = 0;
  for (const auto& [key, share] : pool.shares) {
    percent += share.percent;
    memory += share.memory_bytes;
  }
  percent = std::min<uint32_t>(percent, 100);
  const std::string mem = MiB(memory);
  for (const std::string& c : {"set_default_active_thread_percentage " + std::to_string(percent),
                               "set_default_device_pinned_mem_limit 0 " + mem}) {
    if (auto s = SendLocked(uuid, c); !s.ok()) return s.status();
  }
  auto servers = SendLocked(uuid, "get_server_list");
  if (!servers.ok()) return servers.status();
  for (absl::string_view line : absl::StrSplit(*servers, '\n', absl::SkipWhitespace())) {
    uint32_t pid = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &pid)) continue;
    const std::string p = std::to_string(pid);
    for (const std::string& c :
         {"set_active_thread_percentage " + p + " " + std::to_string(percent),
          "set_device_pinned_mem_limit " + p + " 0 " + mem}) {
      if (auto s = SendLocked(uuid, c); !s.ok()) return s.status();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> MpsPools::Acquire(uint64_t job, uint32_t attempt,
                                                                     const MpsShare& share) {
  if (share.percent == 0 || share.percent > 100 || share.memory_bytes == 0) {
    return absl::InvalidArgumentError("an MPS share needs 1-100% and its GPU memory");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string& uuid = share.gpu_uuid;
  Pool& pool = pools_[uuid];
  const bool had = pool.shares.count({job, attempt}) > 0;
  pool.shares[{job, attempt}] = share;
  absl::Status s = AliveLocked(uuid) ? absl::OkStatus() : StartLocked(uuid);
  if (s.ok()) s = SetLimitsLocked(uuid, pool);
  if (!s.ok()) {
    if (!had) pool.shares.erase({job, attempt});
    if (pool.shares.empty()) {
      if (AliveLocked(uuid)) (void)SendLocked(uuid, "quit");
      pools_.erase(uuid);
    }
    return s;
  }
  return std::map<std::string, std::string>{
      {"CUDA_MPS_PIPE_DIRECTORY", PipeDir(uuid)},
      {"CUDA_MPS_LOG_DIRECTORY", LogDir(uuid)},
      {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(share.percent)},
      {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=" + MiB(share.memory_bytes)}};
}

absl::Status MpsPools::Release(uint64_t job, uint32_t attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = pools_.begin(); it != pools_.end(); ++it) {
    if (it->second.shares.erase({job, attempt}) == 0) continue;
    const std::string uuid = it->first;
    if (!it->second.shares.empty()) return SetLimitsLocked(uuid, it->second);
    pools_.erase(it);
    return AliveLocked(uuid) ? SendLocked(uuid, "quit").status() : absl::OkStatus();
  }
  return absl::OkStatus();
}

std::vector<std::pair<uint64_t, uint32_t>> MpsPools::Check() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Key> hit;
  for (const auto& [uuid, pool] : pools_) {
    if (AliveLocked(uuid)) continue;
    for (const auto& [key, share] : pool.shares) hit.push_back(key);
    if (StartLocked(uuid).ok()) (void)SetLimitsLocked(uuid, pool);
  }
  return hit;
}

}  // namespace baton
