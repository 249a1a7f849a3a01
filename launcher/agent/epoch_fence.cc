#include "launcher/agent/epoch_fence.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "common/daemon.h"
#include "spdlog/spdlog.h"

namespace baton {

namespace {

std::string PathIn(const std::string& data_dir) { return data_dir + "/leader_epoch"; }

}  // namespace

EpochFence::EpochFence(const std::string& data_dir)
    : path_(PathIn(data_dir)), highest_(Recorded(data_dir).value_or(0)) {}

absl::StatusOr<uint64_t> EpochFence::Recorded(const std::string& data_dir) {
  std::string path = PathIn(data_dir);
  std::ifstream in(path);
  if (!in) return uint64_t{0};
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  uint64_t epoch = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), epoch);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return absl::DataLossError(path + " does not hold a leader epoch: '" + s.substr(0, 40) +
                               "' (remove it to trust the next coordinator that connects)");
  }
  return epoch;
}

bool EpochFence::Accept(uint64_t epoch) {
  if (epoch == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch < highest_) {
    spdlog::warn("ignoring a command of leader epoch {}: epoch {} leads (a deposed coordinator)",
                 epoch, highest_);
    return false;
  }
  if (epoch == highest_) return true;
  absl::Status s = WriteFileAtomically(path_, std::to_string(epoch) + "\n");
  if (!s.ok()) {
    spdlog::error("cannot record leader epoch {}: {}; its command waits", epoch, s.ToString());
    return false;
  }
  spdlog::info("coordinator leader epoch {} (was {})", epoch, highest_);
  highest_ = epoch;
  return true;
}

uint64_t EpochFence::highest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return highest_;
}

}  // namespace baton
