// An in-memory coordinator for the agent's unit tests: a CoordinatorLink whose streams
// are queues in this process (no gRPC, no TLS, no port), one per agent, so that many
// agents live in one test binary. It records what its agent sends, answers each
// Register with Registered (the heartbeat interval and lease given) and each heartbeat
// with its ack, as the real coordinator does, and lets the test push commands on the
// live stream, end it, or go mute (the agent is cut off).
// Header-only; thread-safe (one mutex).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "launcher/agent/coordinator_link.h"
#include "proto/agent.pb.h"
#include "tests/launcher/agent_wire.h"
#include "tests/launcher/test_util.h"

namespace baton::launcher_testing {

class MemoryCoordinator : public CoordinatorLink, public AgentMessageLog {
 public:
  MemoryCoordinator(absl::Duration heartbeat_interval, absl::Duration lease)
      : heartbeat_interval_(heartbeat_interval), lease_(lease) {}

  std::unique_ptr<CoordinatorStream> Connect() override {
    std::lock_guard<std::mutex> lock(mu_);
    auto state = std::make_shared<StreamState>();
    state->session = ++sessions_;
    latest_ = state.get();
    return std::make_unique<Stream>(this, std::move(state));
  }

  // Writes `cmd` on the live (registered) stream, waiting for one; false if none came.
  bool Push(const v1::CoordinatorCommand& cmd) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!WaitUntil(cv_, lock, [&] { return live_ != nullptr; })) return false;
    live_->commands.push_back(cmd);
    cv_.notify_all();
    return true;
  }
  // Ends the agent's newest stream (registered or not), as a coordinator restart would;
  // the agent reconnects.
  void Drop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (latest_) CancelLocked(*latest_);
  }
  // Mute: what the agent sends is still recorded, but nothing is answered (no Registered,
  // no heartbeat acks) and no commands go out: a cut link, whose writes still succeed.
  // Unmuted, the next registration is answered again (Drop forces one).
  void SetMute(bool mute) {
    std::lock_guard<std::mutex> lock(mu_);
    mute_ = mute;
    if (mute) live_ = nullptr;
  }
  int sessions() {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_;
  }

 private:
  struct StreamState {
    int session = 0;
    std::deque<v1::CoordinatorCommand> commands;  // to the agent
    bool cancelled = false;
  };
  class Stream : public CoordinatorStream {
   public:
    Stream(MemoryCoordinator* owner, std::shared_ptr<StreamState> state)
        : owner_(owner), state_(std::move(state)) {}
    ~Stream() override {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      if (owner_->live_ == state_.get()) owner_->live_ = nullptr;
      if (owner_->latest_ == state_.get()) owner_->latest_ = nullptr;
    }
    bool Write(const v1::AgentMessage& msg) override { return owner_->Receive(*state_, msg); }
    bool Read(v1::CoordinatorCommand* cmd) override {
      std::unique_lock<std::mutex> lock(owner_->mu_);
      owner_->cv_.wait(lock, [&] { return state_->cancelled || !state_->commands.empty(); });
      if (state_->cancelled) return false;
      *cmd = std::move(state_->commands.front());
      state_->commands.pop_front();
      return true;
    }
    void Cancel() override {
      std::lock_guard<std::mutex> lock(owner_->mu_);
      owner_->CancelLocked(*state_);
    }
    absl::Status Finish() override { return absl::UnavailableError("stream ended"); }

   private:
    MemoryCoordinator* const owner_;
    std::shared_ptr<StreamState> state_;
  };

  bool Receive(StreamState& s, const v1::AgentMessage& msg) {
    std::lock_guard<std::mutex> lock(mu_);
    if (s.cancelled) return false;
    Record(s.session, msg);
    if (mute_) return true;
    if (msg.has_register_()) {
      v1::CoordinatorCommand reply;
      reply.mutable_registered()->set_heartbeat_interval_ms(
          absl::ToInt64Milliseconds(heartbeat_interval_));
      reply.mutable_registered()->set_lease_ms(absl::ToInt64Milliseconds(lease_));
      s.commands.push_back(std::move(reply));
      live_ = &s;  // commands go out only after Registered
    } else if (msg.has_heartbeat() && live_ == &s) {
      v1::CoordinatorCommand ack;  // as the real one: the agent's lease runs on these
      ack.mutable_heartbeat_ack()->set_time_ms(msg.heartbeat().time_ms());
      s.commands.push_back(std::move(ack));
    }
    cv_.notify_all();
    return true;
  }
  void CancelLocked(StreamState& s) {
    s.cancelled = true;
    if (live_ == &s) live_ = nullptr;
    cv_.notify_all();
  }

  const absl::Duration heartbeat_interval_;
  const absl::Duration lease_;
  std::mutex mu_;
  std::condition_variable cv_;
  StreamState* live_ = nullptr;    // the registered stream commands go to
  StreamState* latest_ = nullptr;  // the agent's newest stream
  bool mute_ = false;
  int sessions_ = 0;
};

}  // namespace baton::launcher_testing
