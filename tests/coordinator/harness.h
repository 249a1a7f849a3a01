// A JobManager on a real RocksDB store in a temp dir, simulated time, and agents that
// record the commands sent to them. Tests drive SchedulePass/Tick by hand.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "coordinator/job_manager.h"
#include "coordinator/store.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace baton::testing {

class RecordingLink : public AgentLink {
 public:
  void Send(const v1::CoordinatorCommand& cmd) override {
    std::lock_guard<std::mutex> lock(mu_);
    cmds_.push_back(cmd);
  }
  std::vector<v1::CoordinatorCommand> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    auto out = std::move(cmds_);
    cmds_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<v1::CoordinatorCommand> cmds_;
};

// Proven callers (authentication is the service's; here they are given). In the test
// policy alice is a member of vision, bob of speech, and root is the admin.
inline Caller Who(const std::string& user, std::vector<std::string> groups = {}) {
  Caller c;
  c.user = user;
  c.uid = user == "root" ? 0 : 1000 + static_cast<uint32_t>(user.size());
  c.groups = std::move(groups);
  c.method = "test";
  return c;
}
inline Caller Alice() { return Who("alice"); }
inline Caller Bob() { return Who("bob"); }
inline Caller Admin() { return Who("root"); }

inline Policy TestPolicy() {
  Policy p = Policy::Default();
  p.access.members = {{"vision", {"alice"}}, {"speech", {"bob"}}};
  // Who may use which class is access_test's; here every tenant may use every class.
  p.access.class_tenants = {{"inference-critical", {"*"}}, {"inference", {"*"}}};
  // Agents stop batch jobs 1 s after losing us; with a 1 s grace they are replaced after
  // 1 + 1 + the lost margin (outage_test.cc tests the defaults).
  p.default_stop_after_disconnect_s = 1;
  return p;
}
inline JobManagerOptions TestOptions() {
  JobManagerOptions o;
  o.policy = TestPolicy();
  return o;
}

// The Launch commands among `cmds`, in order.
inline std::vector<v1::Launch> Launches(const std::vector<v1::CoordinatorCommand>& cmds) {
  std::vector<v1::Launch> out;
  for (const auto& c : cmds) {
    if (c.has_launch()) out.push_back(c.launch());
  }
  return out;
}

inline v1::JobSpec Spec(uint32_t nodes = 1, uint32_t gpus = 0,
                        std::vector<std::string> command = {"true"}) {
  v1::JobSpec s;
  s.set_nodes(nodes);
  s.set_gpus_per_node(gpus);
  for (auto& c : command) s.add_command(c);
  s.set_restart_policy(v1::RESTART_POLICY_NEVER);
  return s;
}

// A dependency of `kind` on job (or array) `job`.
inline v1::JobDependency Dependency(v1::DependencyKind kind, uint64_t job) {
  v1::JobDependency d;
  d.set_kind(kind);
  d.set_job(job);
  return d;
}

inline v1::Register Registration(const std::string& node, uint32_t gpus = 4, uint32_t cpus = 8) {
  v1::Register r;
  r.set_node(node);
  r.set_address("127.0.0.1:1" + std::to_string(node.size()));
  r.mutable_inventory()->set_cpus(cpus);
  r.mutable_inventory()->set_memory_bytes(64ull << 30);
  for (uint32_t i = 0; i < gpus; ++i) {
    auto* g = r.mutable_inventory()->add_gpus();
    g->set_index(i);
    g->set_uuid("GPU-" + node + "-" + std::to_string(i));
  }
  return r;
}

inline v1::AttemptReport Report(uint64_t job, uint32_t attempt, v1::AttemptReport::Phase phase,
                                int exit_code = 0) {
  v1::AttemptReport r;
  r.set_job_id(job);
  r.set_attempt(attempt);
  r.set_phase(phase);
  r.set_exit_code(exit_code);
  return r;
}

class Harness {
 public:
  explicit Harness(JobManagerOptions options = TestOptions(), const std::string& dir = "",
                   JobObserver* observer = nullptr)
      : options_(options),
        observer_(observer),
        owned_dir_(dir.empty() ? std::make_unique<TempDir>() : nullptr),
        dir_(dir.empty() ? owned_dir_->path() : dir) {
    Open();
  }
  ~Harness() { Close(); }

  void Open() {
    auto store = Store::Open(dir_ + "/db", {});
    EXPECT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    jm_ = std::make_unique<JobManager>(store_.get(), &clock_, options_, observer_);
    EXPECT_TRUE(jm_->Recover().ok());
  }
  void Close() {
    if (jm_) jm_->Stop();
    jm_.reset();
    store_.reset();
  }
  // A coordinator restart: memory gone, the store reloaded.
  void Restart() {
    Close();
    Open();
  }

  JobManager& jm() { return *jm_; }
  FakeClock& clock() { return clock_; }

  absl::StatusOr<uint64_t> Submit(v1::JobSpec spec, const Caller& who = Alice(),
                                  const std::string& idempotency_key = "") {
    std::promise<absl::StatusOr<uint64_t>> p;
    jm_->Submit(who, std::move(spec), idempotency_key,
                [&](absl::StatusOr<uint64_t> id) { p.set_value(id); });
    return p.get_future().get();
  }
  absl::StatusOr<v1::JobState> Cancel(uint64_t id, const Caller& who = Alice()) {
    std::promise<absl::StatusOr<v1::JobState>> p;
    jm_->Cancel(who, id, "test", [&](absl::StatusOr<v1::JobState> s) { p.set_value(s); });
    return p.get_future().get();
  }
  std::shared_ptr<RecordingLink> Connect(const std::string& node, uint32_t gpus = 4,
                                         v1::Register reg = {}) {
    auto link = std::make_shared<RecordingLink>();
    if (reg.node().empty()) reg = Registration(node, gpus);
    EXPECT_TRUE(jm_->AgentRegister(reg, link).ok());
    jm_->Flush();
    link->Take();  // the Registered hello
    links_[node] = link;
    return link;
  }
  void Disconnect(const std::string& node) { jm_->AgentDisconnected(node, links_.at(node).get()); }
  void Schedule() {
    jm_->SchedulePass();
    jm_->Flush();
  }
  void Tick() {
    jm_->Tick();
    jm_->Flush();
  }
  void Report(const std::string& node, const v1::AttemptReport& r) {
    jm_->AgentReport(node, r);
    jm_->Flush();
  }
  v1::Job Get(uint64_t id) {
    auto job = jm_->Get(Admin(), id);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::Job();
  }
  v1::JobState State(uint64_t id) { return Get(id).state(); }
  std::vector<v1::CoordinatorCommand> Commands(const std::string& node) {
    return links_.at(node)->Take();
  }

 private:
  JobManagerOptions options_;
  JobObserver* observer_;
  std::unique_ptr<TempDir> owned_dir_;
  std::string dir_;
  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<JobManager> jm_;
  std::map<std::string, std::shared_ptr<RecordingLink>> links_;
};

}  // namespace baton::testing
