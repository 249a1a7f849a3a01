#include "coordinator/job_table.h"

#include <stdexcept>
#include <utility>

namespace baton {

bool WaitsInQueue(v1::JobState s) {
  return s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_COOLDOWN;
}

JobTable::QueueKey JobTable::KeyOf(const v1::Job& job) const {
  return {-class_value_(job.spec().priority_class()), job.submitted_ms(), job.id()};
}

void JobTable::Index(const v1::Job& job, int sign) {
  const v1::JobState s = job.state();
  if (s == v1::JOB_STATE_PENDING) {
    if (sign > 0) {
      queue_.insert(queued_as_[job.id()] = KeyOf(job));
    } else if (auto it = queued_as_.find(job.id()); it != queued_as_.end()) {
      queue_.erase(it->second);
      queued_as_.erase(it);
    }
  }
  if (s == v1::JOB_STATE_COOLDOWN) {
    if (sign > 0)
      cooldown_.insert(job.id());
    else
      cooldown_.erase(job.id());
  }
  if (WaitsInQueue(s)) {
    const std::string& tenant = job.spec().tenant();
    if (sign > 0) {
      ++waiting_[tenant];
    } else if (auto it = waiting_.find(tenant); it != waiting_.end() && --it->second == 0) {
      waiting_.erase(it);
    }
  }
}

JobEntry& JobTable::Add(v1::Job job) {
  const uint64_t id = job.id();
  auto [it, added] = jobs_.try_emplace(id);
  if (!added) throw std::logic_error("JobTable::Add: job " + std::to_string(id) + " exists");
  it->second.job = std::move(job);
  Index(it->second.job, +1);
  return it->second;
}

JobEntry* JobTable::Find(uint64_t id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobEntry* JobTable::Find(uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobEntry& JobTable::at(uint64_t id) { return jobs_.at(id); }
const JobEntry& JobTable::at(uint64_t id) const { return jobs_.at(id); }

JobEntry JobTable::Remove(uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.live) {
    throw std::logic_error("JobTable::Remove: job " + std::to_string(id) +
                           (it == jobs_.end() ? " is not here" : " has a live attempt"));
  }
  Index(it->second.job, -1);
  JobEntry e = std::move(it->second);
  jobs_.erase(it);
  return e;
}

void JobTable::SetState(JobEntry& e, v1::JobState to) {
  Index(e.job, -1);
  e.job.set_state(to);
  Index(e.job, +1);
}

void JobTable::StartAttempt(JobEntry& e, LiveAttempt a) {
  e.live = std::make_unique<LiveAttempt>(std::move(a));
  live_.insert(e.job.id());
}

std::vector<uint64_t> JobTable::CooledDown(absl::Time now) const {
  std::vector<uint64_t> out;
  for (uint64_t id : cooldown_) {
    if (absl::FromUnixMillis(jobs_.at(id).job.cooldown_until_ms()) <= now) out.push_back(id);
  }
  return out;
}

std::vector<uint64_t> JobTable::LiveOn(const std::string& node) const {
  std::vector<uint64_t> out;
  for (uint64_t id : live_) {
    const LiveAttempt& a = *jobs_.at(id).live;
    auto part = a.nodes.find(node);
    if (part != a.nodes.end() && part->second != AttemptPhase::kExited) out.push_back(id);
  }
  return out;
}

LiveAttempt JobTable::EndAttempt(JobEntry& e) {
  LiveAttempt a = std::move(*e.live);
  e.live.reset();
  live_.erase(e.job.id());
  return a;
}

void JobTable::Reorder() {
  queue_.clear();
  for (auto& [id, key] : queued_as_) queue_.insert(key = KeyOf(jobs_.at(id).job));
}

uint32_t JobTable::Waiting(const std::string& tenant) const {
  auto it = waiting_.find(tenant);
  return it == waiting_.end() ? 0 : it->second;
}

}  // namespace baton
