#include "coordinator/scheduler/scheduler.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "coordinator/scheduler/order.h"
#include "coordinator/scheduler/pass_state.h"

namespace baton::sched {

using internal::Job;
using internal::Pass;

namespace {

bool SubmittedBefore(const Job& a, const Job& b) {
  return std::tie(a.submitted, a.id) < std::tie(b.submitted, b.id);
}

}  // namespace

struct Scheduler::State {
  explicit State(Policy p) : policy(std::move(p)) {}

  Policy policy;
  ClusterView view;  // nodes, running and usage; the pending jobs live in `pending`
  absl::flat_hash_map<std::string, uint32_t> node_index;
  absl::flat_hash_map<JobId, uint32_t> running_index;
  std::unordered_map<JobId, PendingJob> pending;  // node-based: Job::src stays valid

  // The tables of the last build (null: a node changed since) and the interner that
  // filled their filters and shapes; the capacity BuildNodes counted.
  std::unique_ptr<Pass> base;
  internal::JobInterner interner;
  internal::Amount capacity;
  // The interned pending jobs in (submitted, id) order, as of the last pass; the ids
  // that arrived (or changed) since and those that left (or changed) since.
  std::vector<Job> queue;
  std::vector<JobId> arrived;
  absl::flat_hash_set<JobId> left;
  size_t timed = 0;  // jobs in `queue` whose shape depends on the time
  // Per gang of view.running: its names resolved in `base` (GangRefs::resolved: current).
  std::vector<internal::GangRefs> gang_refs;
  struct Buffers {
    std::vector<Job> jobs;
    std::vector<internal::Gang> gangs;
    std::vector<internal::Hold> holds;
    std::vector<uint32_t> node_holds;
    std::vector<Pass::HoldBrief> hold_brief;
  } buffers;                      // the last pass's arrays, kept for their memory
  std::vector<uint32_t> flipped;  // nodes whose `schedulable` changed since the last pass

  void Prepare(Time now);
  void Rebuild(Time now);
  void ApplyNodeFlips();
  void ApplyQueueChanges(Time now);
  void RetimeJobs(Time now);
  void ResolveGangs();
  Decisions Run(Time now);
};

// The node tables from scratch, and every pending job interned into them again.
void Scheduler::State::Rebuild(Time now) {
  base = std::make_unique<Pass>(view, policy, now);
  internal::InternPolicy(*base);
  capacity = internal::BuildNodes(*base);
  interner = internal::JobInterner{};
  queue.clear();
  queue.reserve(pending.size());
  timed = 0;
  for (const auto& [id, job] : pending) {
    queue.push_back(interner.Intern(*base, job));
    timed += queue.back().timed;
  }
  std::sort(queue.begin(), queue.end(), SubmittedBefore);
  arrived.clear();
  left.clear();
  flipped.clear();
  for (internal::GangRefs& f : gang_refs) f = {};
}

void Scheduler::State::ApplyNodeFlips() {
  if (flipped.empty()) return;
  for (uint32_t node : flipped) {
    internal::SetSchedulable(*base, node, view.nodes[node].schedulable);
  }
  flipped.clear();
  capacity = internal::Amount{};
  for (uint32_t i = 0; i < view.nodes.size(); ++i) {
    if (base->hw[i].schedulable) capacity += internal::NodeCapacity(*base, i);
  }
}

// Drops the jobs that left and merges in those that arrived: one walk of the queue.
void Scheduler::State::ApplyQueueChanges(Time now) {
  if (arrived.empty() && left.empty()) return;
  if (!left.empty()) {
    auto gone = [&](const Job& j) {
      if (!left.contains(j.id)) return false;
      timed -= j.timed;
      return true;
    };
    queue.erase(std::remove_if(queue.begin(), queue.end(), gone), queue.end());
  }
  std::sort(arrived.begin(), arrived.end());
  arrived.erase(std::unique(arrived.begin(), arrived.end()), arrived.end());
  std::vector<Job> fresh;
  base->now = now;
  for (JobId id : arrived) {
    auto it = pending.find(id);
    if (it == pending.end()) continue;  // arrived and left again
    fresh.push_back(interner.Intern(*base, it->second));
    timed += fresh.back().timed;
  }
  std::sort(fresh.begin(), fresh.end(), SubmittedBefore);
  size_t mid = queue.size();
  queue.insert(queue.end(), fresh.begin(), fresh.end());
  std::inplace_merge(queue.begin(), queue.begin() + static_cast<ptrdiff_t>(mid), queue.end(),
                     SubmittedBefore);
  arrived.clear();
  left.clear();
}

// A required topology that relaxes after a wait gives the job another shape once the
// wait is over: such jobs are interned again at each pass's time.
void Scheduler::State::RetimeJobs(Time now) {
  if (timed == 0) return;
  base->now = now;
  for (Job& j : queue) {
    if (j.timed) j = interner.Intern(*base, *j.src);
  }
}

void Scheduler::State::Prepare(Time now) {
  if (!base) {
    Rebuild(now);
  } else {
    ApplyNodeFlips();
    ApplyQueueChanges(now);
  }
  RetimeJobs(now);
  ResolveGangs();  // before the tables are copied: it interns new tenants and users
}

Decisions Scheduler::State::Run(Time now) {
  Prepare(now);
  Pass pass(view, policy, now);
  static_cast<internal::PassTables&>(pass) = *base;
  pass.reserved.assign(view.nodes.size(), internal::NodeReservation{});
  // The last pass's arrays, for their memory: a million jobs' worth of fresh pages costs
  // more than the pass's work on them.
  pass.jobs.swap(buffers.jobs);
  pass.gangs.swap(buffers.gangs);
  pass.holds.swap(buffers.holds);
  pass.node_holds.swap(buffers.node_holds);
  pass.hold_brief.swap(buffers.hold_brief);
  internal::BuildGangs(pass, gang_refs);
  internal::BuildQuota(pass, capacity);  // reads no job; the order reads its shares
  internal::IndexVictims(pass);
  internal::OrderFromSubmission(pass, queue);
  if (!pass.awaited.empty()) {
    for (Job& j : pass.jobs) j.awaits_victims = pass.awaited.contains(j.id);
  }
  Decisions out = internal::PlanPass(pass);
  buffers.jobs.swap(pass.jobs);
  buffers.gangs.swap(pass.gangs);
  buffers.holds.swap(pass.holds);
  buffers.node_holds.swap(pass.node_holds);
  buffers.hold_brief.swap(pass.hold_brief);
  return out;
}

// Names looked up once per gang: again only for gangs that changed, or all of them when
// the node tables were built again.
void Scheduler::State::ResolveGangs() {
  for (uint32_t i = 0; i < view.running.size(); ++i) {
    if (!gang_refs[i].resolved)
      gang_refs[i] = internal::ResolveGang(*base, view.running[i], node_index);
  }
}

Scheduler::Scheduler(Policy policy) : state_(std::make_unique<State>(std::move(policy))) {}
Scheduler::~Scheduler() = default;

void Scheduler::UpsertNode(NodeInfo node) {
  State& s = *state_;
  auto [it, added] = s.node_index.try_emplace(node.name, s.view.nodes.size());
  if (added) {
    s.view.nodes.push_back(std::move(node));
    s.base.reset();
    return;
  }
  NodeInfo& old = s.view.nodes[it->second];
  // Connected again or no more, and nothing else: the built tables follow at the next
  // pass. Anything else may move it to another group or hardware class: built again.
  bool schedulable = node.schedulable;
  node.schedulable = old.schedulable;
  if (node == old) {
    if (schedulable == old.schedulable) return;
    old.schedulable = schedulable;
    s.flipped.push_back(it->second);
    return;
  }
  node.schedulable = schedulable;
  old = std::move(node);
  s.base.reset();
}

void Scheduler::RemoveNode(const std::string& name) {
  State& s = *state_;
  auto it = s.node_index.find(name);
  if (it == s.node_index.end()) return;
  s.view.nodes.erase(s.view.nodes.begin() + it->second);
  s.node_index.clear();
  for (uint32_t i = 0; i < s.view.nodes.size(); ++i) s.node_index[s.view.nodes[i].name] = i;
  s.base.reset();
}

void Scheduler::UpsertRunning(RunningGang gang) {
  State& s = *state_;
  auto [it, added] = s.running_index.try_emplace(gang.id, s.view.running.size());
  if (added) {
    s.view.running.push_back(std::move(gang));
    s.gang_refs.emplace_back();
  } else {
    s.view.running[it->second] = std::move(gang);
    s.gang_refs[it->second] = {};
  }
}

void Scheduler::RemoveRunning(JobId id) {
  State& s = *state_;
  auto it = s.running_index.find(id);
  if (it == s.running_index.end()) return;
  uint32_t at = it->second;
  s.running_index.erase(it);
  if (at + 1 != s.view.running.size()) {
    s.view.running[at] = std::move(s.view.running.back());
    s.gang_refs[at] = std::move(s.gang_refs.back());
    s.running_index[s.view.running[at].id] = at;
  }
  s.view.running.pop_back();
  s.gang_refs.pop_back();
}

void Scheduler::UpsertPending(PendingJob job) {
  State& s = *state_;
  JobId id = job.id;
  auto [it, added] = s.pending.try_emplace(id);
  // A changed job leaves the queue and arrives again: its place and shape may change.
  if (!added) s.left.insert(id);
  it->second = std::move(job);
  s.arrived.push_back(id);
}

void Scheduler::RemovePending(JobId id) {
  State& s = *state_;
  if (s.pending.erase(id) == 0) return;
  s.left.insert(id);
}

void Scheduler::SetUsage(std::map<std::string, double> usage) {
  state_->view.usage = std::move(usage);
}

void Scheduler::Prepare(Time now) { state_->Prepare(now); }
Decisions Scheduler::Plan(Time now) { return state_->Run(now); }

ClusterView Scheduler::View() const {
  const State& s = *state_;
  ClusterView v;
  v.nodes = s.view.nodes;
  v.running = s.view.running;
  v.usage = s.view.usage;
  v.pending.reserve(s.pending.size());
  for (const auto& [id, job] : s.pending) v.pending.push_back(job);
  return v;
}

const Policy& Scheduler::policy() const { return state_->policy; }
size_t Scheduler::pending_size() const { return state_->pending.size(); }

}  // namespace baton::sched
