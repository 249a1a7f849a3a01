#include "coordinator/arrays.h"

#include <algorithm>

namespace baton::arrays {

uint32_t Step(const v1::ArraySpec& a) { return a.has_step() && a.step() > 0 ? a.step() : 1; }

uint32_t TaskCount(const v1::ArraySpec& a) {
  if (a.last() < a.first()) return 0;
  return (a.last() - a.first()) / Step(a) + 1;
}

uint32_t IndexAt(const v1::ArraySpec& a, uint32_t position) {
  return a.first() + position * Step(a);
}

std::optional<uint32_t> PositionOf(const v1::ArraySpec& a, uint32_t index) {
  if (index < a.first() || index > a.last() || (index - a.first()) % Step(a) != 0) {
    return std::nullopt;
  }
  return (index - a.first()) / Step(a);
}

absl::Status CheckSpec(const v1::ArraySpec& a, uint32_t max_tasks) {
  if (a.last() < a.first()) {
    return absl::InvalidArgumentError("array: the range " + std::to_string(a.first()) + "-" +
                                      std::to_string(a.last()) + " is reversed");
  }
  if (a.has_step() && a.step() == 0) return absl::InvalidArgumentError("array: step 0");
  if (a.has_max_running() && a.max_running() == 0) {
    return absl::InvalidArgumentError("array: %0 would never run a task");
  }
  const uint64_t n = static_cast<uint64_t>(a.last() - a.first()) / Step(a) + 1;
  if (n > max_tasks) {
    return absl::InvalidArgumentError("array: " + std::to_string(n) + " tasks; at most " +
                                      std::to_string(max_tasks) + " (admission.max_array_tasks)");
  }
  return absl::OkStatus();
}

std::string Substitute(const std::string& text, uint64_t array_id, uint32_t index) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[i + 1];
    if (c == 'A') {
      out += std::to_string(array_id);
    } else if (c == 'a') {
      out += std::to_string(index);
    } else if (c == '%') {
      out += '%';
    } else {
      out += text[i];
      continue;
    }
    ++i;
  }
  return out;
}

v1::JobSpec TaskSpec(const v1::JobSpec& array_spec, uint64_t array_id, uint32_t index) {
  v1::JobSpec s = array_spec;
  s.clear_array();
  s.clear_after();  // the array waited for them as a whole
  s.set_name(Substitute(s.name(), array_id, index));
  s.set_working_dir(Substitute(s.working_dir(), array_id, index));
  s.set_checkpoint_dir(Substitute(s.checkpoint_dir(), array_id, index));
  return s;
}

MakePlan ToMake(const v1::JobArray& array, uint32_t unfinished, uint32_t waiting,
                uint32_t last_batch) {
  if (!array.cancelled_by().empty() || array.made() >= array.tasks()) return {0, last_batch};
  if (array.after_met_size() < array.spec().after_size()) return {0, 0};  // it waits whole
  if (array.has_hold()) return {0, 0};                                    // so does a held one
  const uint32_t left = array.tasks() - array.made();
  const v1::ArraySpec& a = array.spec().array();
  if (a.has_max_running()) {
    if (unfinished >= a.max_running()) return {0, 0};
    return {std::min(left, a.max_running() - unfinished), 0};
  }
  if (waiting > 0) return {0, 0};  // the cluster is full for them: start again small
  const uint32_t batch = last_batch == 0 ? kFirstBatch : std::min(kMaxBatch, 2 * last_batch);
  return {std::min(left, batch), batch};
}

std::optional<uint32_t> NextPosition(const v1::JobArray& array) {
  for (uint32_t p = array.made(); p < array.tasks(); ++p) {
    if (std::find(array.skipped().begin(), array.skipped().end(), p) == array.skipped().end()) {
      return p;
    }
  }
  return std::nullopt;
}

v1::Job AsJob(const v1::JobArray& array) {
  v1::Job job;
  *job.mutable_spec() = array.spec();
  job.set_user(array.user());
  return job;
}

uint32_t Unmade(const v1::JobArray& array) {
  if (!array.cancelled_by().empty() || array.made() >= array.tasks()) return 0;
  const auto skipped = std::count_if(array.skipped().begin(), array.skipped().end(),
                                     [&array](uint32_t p) { return p >= array.made(); });
  return array.tasks() - array.made() - static_cast<uint32_t>(skipped);
}

uint32_t TasksLeft(const v1::JobArray& array) {
  const uint32_t ended = array.succeeded() + array.failed() + array.cancelled();
  return array.tasks() > ended ? array.tasks() - ended : 0;
}

v1::JobState EndState(const v1::JobArray& array) {
  if (array.finished_ms() == 0) return v1::JOB_STATE_PENDING;
  if (array.succeeded() == array.tasks()) return v1::JOB_STATE_SUCCEEDED;
  return array.failed() > 0 ? v1::JOB_STATE_FAILED : v1::JOB_STATE_CANCELLED;
}

std::string Label(const v1::JobArray& array) {
  const v1::ArraySpec& a = array.spec().array();
  std::string out = std::to_string(array.id()) + "_[" + std::to_string(a.first());
  if (a.last() != a.first()) out += "-" + std::to_string(a.last());
  if (Step(a) != 1) out += ":" + std::to_string(Step(a));
  if (a.has_max_running()) out += "%" + std::to_string(a.max_running());
  return out + "]";
}

std::string TaskLabel(uint64_t array_id, uint32_t index) {
  return std::to_string(array_id) + "_" + std::to_string(index);
}

}  // namespace baton::arrays
