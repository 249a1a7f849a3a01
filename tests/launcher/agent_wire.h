// What passes between a coordinator and an agent, for the agents' tests: the commands
// a coordinator sends (a launch of one node's ranks, a kill, an acknowledgement), a log
// of what an agent sent that tests wait on, and what it told its observer.
// Header-only; the log and the count are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "launcher/agent/attempt_observer.h"
#include "proto/agent.pb.h"
#include "tests/launcher/test_util.h"

namespace baton::launcher_testing {

inline constexpr char kNode[] = "node-t";

// Every message an agent sent a (fake) coordinator, with the stream it came on.
class AgentMessageLog {
 public:
  struct Received {
    int session;
    v1::AgentMessage msg;
  };
  void Record(int session, const v1::AgentMessage& msg) {
    std::lock_guard<std::mutex> lock(log_mu_);
    received_.push_back({session, msg});
    log_cv_.notify_all();
  }
  // The first message at or after index `from` that satisfies `pred` (waits for it).
  std::optional<Received> WaitFor(const std::function<bool(const Received&)>& pred,
                                  size_t from = 0) {
    std::unique_lock<std::mutex> lock(log_mu_);
    std::optional<Received> found;
    WaitUntil(log_cv_, lock, [&] {
      for (size_t i = from; i < received_.size(); ++i) {
        if (pred(received_[i])) {
          found = received_[i];
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<Received> received() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return received_;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return received_.size();
  }

 private:
  std::mutex log_mu_;
  std::condition_variable log_cv_;
  std::vector<Received> received_;
};

// What the agent told its AttemptObserver: the heartbeat acks it handled, and the
// attempts whose launch it committed (called under its lock, as the launch is committed).
class ObserverLog : public AttemptObserver {
 public:
  void OnHeartbeatAck(absl::Duration) override { acks_.fetch_add(1); }
  void OnAttemptStarted(const v1::Launch& l, const v1::AttemptIsolation&) override {
    std::lock_guard<std::mutex> lock(mu_);
    started_.push_back({l.job_id(), l.attempt()});
  }
  int acks() const { return acks_.load(); }
  bool started(uint64_t job, uint32_t attempt = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : started_) {
      if (s == std::pair<uint64_t, uint32_t>{job, attempt}) return true;
    }
    return false;
  }

 private:
  std::atomic<int> acks_{0};
  std::mutex mu_;
  std::vector<std::pair<uint64_t, uint32_t>> started_;
};

inline v1::CoordinatorCommand LaunchCommand(uint64_t job, std::vector<std::string> command,
                                            uint32_t ranks = 1, std::vector<std::string> gpus = {},
                                            uint32_t attempt = 1, const std::string& node = kNode) {
  v1::CoordinatorCommand cmd;
  v1::Launch* l = cmd.mutable_launch();
  l->set_job_id(job);
  l->set_attempt(attempt);
  l->set_node_rank(0);
  l->set_master_port(29500);
  // The agent's own tests run their jobs as root (allowed); who a job runs as is tested
  // with the test users (agent_test.cc, "AsItsOwner").
  l->set_user("root");
  l->set_allow_root(true);
  v1::JobSpec* s = l->mutable_spec();
  s->set_name("job" + std::to_string(job));
  s->set_tenant("vision");
  s->set_nodes(1);
  s->set_ranks_per_node(ranks);
  s->set_gpus_per_node(static_cast<uint32_t>(gpus.size()));
  for (auto& arg : command) s->add_command(arg);
  v1::NodeAssignment* p = l->add_placement();
  p->set_node(node);
  p->set_address("127.0.0.1");
  for (auto& g : gpus) p->add_gpu_ids(g);
  return cmd;
}

inline v1::CoordinatorCommand KillCommand(uint64_t job, int signal, uint32_t grace_seconds) {
  v1::CoordinatorCommand cmd;
  cmd.mutable_kill()->set_job_id(job);
  cmd.mutable_kill()->set_attempt(1);
  cmd.mutable_kill()->set_signal(signal);
  cmd.mutable_kill()->set_grace_seconds(grace_seconds);
  cmd.mutable_kill()->set_reason("test");
  return cmd;
}

inline v1::CoordinatorCommand AckCommand(uint64_t job) {
  v1::CoordinatorCommand cmd;
  cmd.mutable_ack()->set_job_id(job);
  cmd.mutable_ack()->set_attempt(1);
  return cmd;
}

}  // namespace baton::launcher_testing
