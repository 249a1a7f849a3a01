#include "coordinator/dependencies.h"

#include <algorithm>

#include "proto/rpc_util.h"

namespace baton::deps {

Verdict Judge(v1::DependencyKind kind, v1::JobState state) {
  if (state == v1::JOB_STATE_UNSPECIFIED) return Verdict::kNever;
  if (!IsTerminal(state)) return Verdict::kWaiting;
  const bool ok = state == v1::JOB_STATE_SUCCEEDED;
  switch (kind) {
    case v1::DEPENDENCY_KIND_OK:
      return ok ? Verdict::kMet : Verdict::kNever;
    case v1::DEPENDENCY_KIND_NOTOK:
      return ok ? Verdict::kNever : Verdict::kMet;
    case v1::DEPENDENCY_KIND_ANY:
      return Verdict::kMet;
    default:
      return Verdict::kNever;  // refused at submit; never waits forever
  }
}

namespace {

// What the dependent waits for the job to do.
const char* Wanted(v1::DependencyKind kind) {
  switch (kind) {
    case v1::DEPENDENCY_KIND_OK:
      return "succeed";
    case v1::DEPENDENCY_KIND_NOTOK:
      return "fail or be cancelled";
    default:
      return "end";
  }
}

}  // namespace

absl::Status CheckSpec(const v1::JobSpec& spec) {
  if (spec.after_size() > kMaxDependencies) {
    return absl::InvalidArgumentError("after: " + std::to_string(spec.after_size()) +
                                      " dependencies; at most " + std::to_string(kMaxDependencies));
  }
  for (int i = 0; i < spec.after_size(); ++i) {
    const v1::JobDependency& d = spec.after(i);
    const std::string at = "after[" + std::to_string(i) + "]";
    if (d.kind() != v1::DEPENDENCY_KIND_OK && d.kind() != v1::DEPENDENCY_KIND_ANY &&
        d.kind() != v1::DEPENDENCY_KIND_NOTOK) {
      return absl::InvalidArgumentError(at + ": no kind (ok, any or notok)");
    }
    if (d.job() == 0) return absl::InvalidArgumentError(at + ": no job id");
  }
  return absl::OkStatus();
}

absl::Status CheckTarget(const v1::JobDependency& d, const v1::Job& target,
                         bool target_is_service) {
  if (target_is_service) {
    return absl::InvalidArgumentError("after " + DependencyName(d) + ": job " +
                                      std::to_string(d.job()) + " is a service (class " +
                                      target.spec().priority_class() +
                                      "): services do not end, so nothing can wait for one");
  }
  return absl::OkStatus();
}

std::vector<int> Unmet(const v1::Job& job) {
  std::vector<int> out;
  for (int i = 0; i < job.spec().after_size(); ++i) {
    const auto& met = job.after_met();
    if (std::find(met.begin(), met.end(), static_cast<uint32_t>(i)) == met.end()) {
      out.push_back(i);
    }
  }
  return out;
}

std::string WaitText(const v1::JobDependency& d, v1::JobState state, size_t more, bool array) {
  std::string out = std::string("waiting for ") + (array ? "array " : "job ") +
                    std::to_string(d.job()) + " to " + Wanted(d.kind()) +
                    (array ? " (as a whole, once every task has ended)" : "");
  if (state != v1::JOB_STATE_UNSPECIFIED) out += " (it is " + StateName(state) + ")";
  if (more > 0) out += "; and " + std::to_string(more) + " more";
  return out;
}

std::string NeverText(const v1::JobDependency& d, v1::JobState state) {
  const std::string job = "job " + std::to_string(d.job());
  return "dependency never satisfied: " +
         (state == v1::JOB_STATE_UNSPECIFIED ? job + " is no longer on record"
                                             : job + " " + StateName(state)) +
         " (" + DependencyName(d) + ")";
}

std::string MetText(const v1::JobDependency& d, v1::JobState state) {
  return "dependency " + DependencyName(d) + " met: job " + std::to_string(d.job()) + " " +
         StateName(state);
}

std::vector<uint64_t> DependentsIndex::Take(uint64_t on) {
  auto it = index_.find(on);
  if (it == index_.end()) return {};
  std::vector<uint64_t> out = std::move(it->second);
  index_.erase(it);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace baton::deps
