#include "coordinator/job_table.h"

#include <stdexcept>
#include <utility>

#include "coordinator/packed_spec.h"

namespace baton {

bool WaitsInQueue(v1::JobState s) {
  return s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_COOLDOWN;
}

namespace {

void Unpack(const std::string& packed, v1::JobSpec* spec) {
  if (!UnpackSpec(packed, spec)) throw std::logic_error("JobTable: a packed spec is corrupt");
}

void Unpack(JobEntry& e) {
  Unpack(e.packed_spec, e.job.mutable_spec());
  std::string().swap(e.packed_spec);
}

// Env and command move out of the spec into the entry's packed string (packed_spec.h),
// with what was packed before.
void Pack(JobEntry& e) {
  v1::JobSpec* spec = e.job.mutable_spec();
  if (spec->env().empty() && spec->command().empty()) return;  // none, or packed already
  Unpack(e);
  e.packed_spec = PackSpec(spec);
}

}  // namespace

v1::Job JobTable::Whole(const JobEntry& e) {
  v1::Job out = e.job;
  Unpack(e.packed_spec, out.mutable_spec());
  return out;
}

JobTable::QueueKey JobTable::KeyOf(const v1::Job& job) const {
  return {-class_value_(job.spec().priority_class()), job.submitted_ms(), job.id()};
}

void JobTable::Index(JobEntry& e, int sign) {
  const v1::Job& job = e.job;
  const v1::JobState s = job.state();
  if (s == v1::JOB_STATE_PENDING) {
    if (sign > 0) {
      queue_.insert(e.queued_as = KeyOf(job));
    } else {
      queue_.erase(e.queued_as);
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
  // Ids mostly come in order (a restart loads them so; new jobs get the next): a hint at
  // the end makes each insert constant time.
  const size_t before = jobs_.size();
  auto it = jobs_.try_emplace(jobs_.end(), id);
  const bool added = jobs_.size() > before;
  if (!added) throw std::logic_error("JobTable::Add: job " + std::to_string(id) + " exists");
  it->second.job = std::move(job);
  Pack(it->second);
  Index(it->second, +1);
  return it->second;
}

void JobTable::Adopt(std::map<uint64_t, JobEntry> entries,
                     const std::function<void(JobEntry&)>& fn) {
  if (!entries.empty() && !jobs_.empty() && entries.begin()->first <= jobs_.rbegin()->first) {
    throw std::logic_error("JobTable::Adopt: job " + std::to_string(entries.begin()->first) +
                           " is not above every job here");
  }
  while (!entries.empty()) {
    auto it = jobs_.insert(jobs_.end(), entries.extract(entries.begin()));
    JobEntry& e = it->second;
    if (e.live) throw std::logic_error("JobTable::Adopt: a job with a live attempt");
    Pack(e);
    Index(e, +1);
    fn(e);
  }
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
  Index(it->second, -1);
  Unpack(it->second);
  JobEntry e = std::move(it->second);
  jobs_.erase(it);
  return e;
}

void JobTable::SetState(JobEntry& e, v1::JobState to) {
  Index(e, -1);
  e.job.set_state(to);
  Index(e, +1);
}

void JobTable::StartAttempt(JobEntry& e, LiveAttempt a) {
  e.live = std::make_unique<LiveAttempt>(std::move(a));
  Unpack(e);
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
  Pack(e);
  return a;
}

void JobTable::Reorder() {
  std::vector<uint64_t> queued;
  for (const QueueKey& key : queue_) queued.push_back(std::get<2>(key));
  queue_.clear();
  for (uint64_t id : queued) {
    JobEntry& e = jobs_.at(id);
    queue_.insert(e.queued_as = KeyOf(e.job));
  }
}

uint32_t JobTable::Waiting(const std::string& tenant) const {
  auto it = waiting_.find(tenant);
  return it == waiting_.end() ? 0 : it->second;
}

}  // namespace baton
