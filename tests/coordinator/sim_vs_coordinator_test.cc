// The simulator and the live coordinator make the same decisions on the same trace: the
// JobManager (real RocksDB store, fake clock, recording agents) is driven pass by pass at
// the times the simulator ran its passes, its agents report starts and exits as the
// workload says, and every pass's placements (job, nodes, GPUs) and evictions must match
// what baton-sim decided at that time.
#include <map>
#include <set>

#include "coordinator/sched_adapter.h"
#include "coordinator/sim/simulator.h"
#include "gtest/gtest.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

using Phase = v1::AttemptReport;
using sim::Time;

struct TraceJob {
  Time submit;  // after the start
  std::string cls;
  uint32_t nodes, gpus;
  Time duration;
};

// Decisions of one pass in a comparable form: "job -> node:gpu,gpu node:gpu" per placement
// and "evict job" per victim, sorted.
using PassLog = std::set<std::string>;

std::string Placement(uint64_t job,
                      const std::vector<std::pair<std::string, std::vector<std::string>>>& nodes) {
  std::string out = "place " + std::to_string(job) + " ->";
  for (const auto& [node, gpus] : nodes) {
    out += " " + node + ":";
    for (const std::string& g : gpus) out += g + ",";
  }
  return out;
}

constexpr Time kGrace = 30'000;

Policy ComparePolicy() {
  Policy p = TestPolicy();
  for (auto& c : p.classes) {
    if (c.service) continue;
    c.min_runtime_s = 60;
    c.cooldown_base_s = 10;
  }
  p.default_grace_seconds = kGrace / 1000;
  return p;
}

const std::vector<TraceJob>& Trace() {
  static const std::vector<TraceJob> k = {
      {0, "experiment", 1, 4, 600'000},      {0, "experiment", 1, 2, 900'000},
      {10'000, "training", 1, 2, 300'000},   {20'000, "training", 1, 4, 400'000},
      {90'000, "inference", 1, 2, 600'000},  {100'000, "experiment", 1, 1, 100'000},
      {150'000, "training", 2, 4, 300'000},  {200'000, "experiment", 1, 2, 120'000},
      {400'000, "experiment", 1, 1, 60'000}, {500'000, "training", 1, 1, 200'000}};
  return k;
}

// The simulator's run: each pass's time and decisions.
std::vector<std::pair<Time, PassLog>> Simulate(const std::vector<sched::NodeInfo>& nodes,
                                               const Policy& policy, Time start, Time until) {
  sim::SimOptions options;
  options.grace_ms = kGrace;
  sim::Simulator s(nodes, policy, options, start);
  std::vector<std::pair<Time, PassLog>> passes;
  s.set_pass_observer([&](const sched::ClusterView& view, Time now, const sched::Decisions& d) {
    PassLog log;
    for (const sched::Placement& p : d.placements) {
      std::vector<std::pair<std::string, std::vector<std::string>>> where;
      for (const sched::HeldNode& h : sched::ToHeld(view, p))
        where.push_back({h.node, h.gpu_uuids});
      log.insert(Placement(p.job, where));
    }
    for (const sched::Eviction& e : d.evictions) log.insert("evict " + std::to_string(e.victim));
    passes.push_back({now, log});
  });
  uint64_t id = 1;
  for (const TraceJob& j : Trace()) {
    sched::PendingJob p;
    p.id = id++;
    p.tenant = "vision";
    p.priority_class = j.cls;
    p.submitted = start + j.submit;
    p.request.nodes = j.nodes;
    p.request.gpus_per_node = j.gpus;
    p.request.ranks_per_node = j.gpus;
    p.request.cpu_millis_per_node = policy.default_cpu_millis_per_rank * j.gpus;
    p.request.memory_bytes_per_node = policy.default_memory_bytes_per_rank * j.gpus;
    s.Submit(p, sim::SimWork{j.duration, 0, 0, 0});
  }
  s.RunUntil(until);
  return passes;
}

// The live side's workload: when each running attempt exits by itself or after a Preempt.
class Agents {
 public:
  explicit Agents(Harness& h) : h_(h) {}

  // Reports everything due by `t`, in time order, the clock moved to each.
  void RunUntil(Time t) {
    while (!due_.empty() && due_.begin()->first.first <= t) {
      auto [key, exit] = *due_.begin();
      due_.erase(due_.begin());
      h_.clock().SetMs(key.first);
      for (const std::string& node : exit.nodes) {
        h_.Report(node, Report(exit.job, exit.attempt, Phase::PHASE_EXITED, 0));
      }
    }
  }

  // The commands of a pass: launches start at once (and finish after their duration),
  // preempted attempts leave after the grace. Returns the pass's decisions.
  PassLog Take(const std::vector<std::string>& nodes, const std::map<uint64_t, Time>& duration) {
    PassLog log;
    std::set<uint64_t> launched, preempted;
    Time now = h_.clock().NowMs();
    for (const std::string& node : nodes) {
      for (const v1::CoordinatorCommand& c : h_.Commands(node)) {
        if (c.has_launch() && launched.insert(c.launch().job_id()).second) {
          const v1::Launch& l = c.launch();
          std::vector<std::pair<std::string, std::vector<std::string>>> where;
          Exit exit{l.job_id(), l.attempt(), {}};
          for (const v1::NodeAssignment& a : l.placement()) {
            where.push_back({a.node(), {a.gpu_ids().begin(), a.gpu_ids().end()}});
            exit.nodes.push_back(a.node());
          }
          log.insert(Placement(l.job_id(), where));
          for (const std::string& n : exit.nodes) {
            h_.Report(n, Report(l.job_id(), l.attempt(), Phase::PHASE_RUNNING));
          }
          running_[l.job_id()] = {now + duration.at(l.job_id()), exit};
          due_[{now + duration.at(l.job_id()), l.job_id()}] = exit;
        }
        if (c.has_preempt() && preempted.insert(c.preempt().job_id()).second) {
          log.insert("evict " + std::to_string(c.preempt().job_id()));
          auto& [finish, exit] = running_.at(c.preempt().job_id());
          if (finish > now + kGrace) {
            due_.erase({finish, exit.job});
            due_[{now + kGrace, exit.job}] = exit;
          }
        }
      }
    }
    return log;
  }

 private:
  struct Exit {
    uint64_t job;
    uint32_t attempt;
    std::vector<std::string> nodes;
  };
  Harness& h_;
  std::map<std::pair<Time, uint64_t>, Exit> due_;
  std::map<uint64_t, std::pair<Time, Exit>> running_;
};

TEST(SimVsCoordinator, SamePlacementsAndEvictionsPassForPass) {
  JobManagerOptions options = TestOptions();
  options.policy = ComparePolicy();
  Harness h(options);
  const std::vector<std::string> names = {"n1", "n2"};
  std::vector<sched::NodeInfo> nodes;
  for (const std::string& n : names) {
    v1::Register reg = Registration(n, /*gpus=*/4);
    h.Connect(n, 4, reg);
    v1::Node node;
    node.set_name(n);
    node.set_state(v1::NODE_STATE_READY);
    *node.mutable_inventory() = reg.inventory();
    nodes.push_back(NodeInfoOf(node));
  }
  Time start = h.clock().NowMs();
  Time until = start + 60 * 60'000;
  std::vector<std::pair<Time, PassLog>> passes = Simulate(nodes, options.policy, start, until);

  Agents agents(h);
  std::map<uint64_t, Time> duration;
  size_t next = 0;
  size_t placements = 0, evictions = 0;
  for (const auto& [t, expected] : passes) {
    // Submits and exits due by the pass, in time order; then the pass itself.
    while (next < Trace().size() && start + Trace()[next].submit <= t) {
      const TraceJob& j = Trace()[next++];
      agents.RunUntil(start + j.submit);
      h.clock().SetMs(std::max(h.clock().NowMs(), start + j.submit));
      v1::JobSpec spec = Spec(j.nodes, j.gpus);
      spec.set_ranks_per_node(j.gpus);
      spec.set_priority_class(j.cls);
      spec.set_tenant("vision");
      absl::StatusOr<uint64_t> id = h.Submit(spec);
      ASSERT_TRUE(id.ok()) << id.status();
      ASSERT_EQ(*id, next) << "ids in trace order, as the simulator numbers them";
      duration[*id] = j.duration;
    }
    agents.RunUntil(t);
    h.clock().SetMs(t);
    for (const std::string& n : names) h.jm().AgentHeartbeat(n);
    h.Tick();  // cooldowns that ended
    h.Schedule();
    PassLog live = agents.Take(names, duration);
    ASSERT_EQ(live, expected) << "pass at t=" << (t - start) / 1000 << " s";
    for (const std::string& d : live) (d.starts_with("evict") ? evictions : placements) += 1;
  }
  // Experiments 1 and 2 are both evicted for training job 4 (the inference job, a higher
  // class, takes the room the first eviction made), the 2-node gang waits at the head of
  // the line, and all ten run: 12 placements.
  EXPECT_EQ(placements, 12u);
  EXPECT_EQ(evictions, 2u);
}

}  // namespace
}  // namespace baton::testing
