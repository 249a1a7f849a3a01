#include "coordinator/job_listing.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "coordinator/job_state.h"
#include "proto/rpc_util.h"

namespace baton {
namespace {

constexpr int kFinished = 2;  // Position's group of finished jobs

constexpr auto kByPosition = [](const auto& x, const auto& y) { return x.first < y.first; };

}  // namespace

std::string JobListing::EncodeToken(const Position& p) {
  return "p1." + std::to_string(std::get<0>(p)) + "." + std::to_string(std::get<1>(p)) + "." +
         std::to_string(std::get<2>(p)) + "." + std::to_string(std::get<3>(p));
}

absl::StatusOr<JobListing::Position> JobListing::DecodeToken(const std::string& token) {
  std::vector<std::string> parts = absl::StrSplit(token, '.');
  Position p;
  if (parts.size() != 5 || parts[0] != "p1" || !absl::SimpleAtoi(parts[1], &std::get<0>(p)) ||
      !absl::SimpleAtoi(parts[2], &std::get<1>(p)) ||
      !absl::SimpleAtoi(parts[3], &std::get<2>(p)) ||
      !absl::SimpleAtoi(parts[4], &std::get<3>(p))) {
    return absl::InvalidArgumentError(
        "page_token: not a token this coordinator gave (start again without one)");
  }
  return p;
}

absl::StatusOr<JobListing> JobListing::Start(const v1::ListRequest& req,
                                             std::shared_ptr<const Policy> policy) {
  JobListing l(req, std::move(policy));
  if (!req.page_token().empty()) {
    absl::StatusOr<Position> after = DecodeToken(req.page_token());
    if (!after.ok()) return after.status();
    l.after_ = *after;
  }
  l.states_.insert(req.states().begin(), req.states().end());
  l.finished_wanted_ =
      l.states_.empty() ? req.all() : std::any_of(l.states_.begin(), l.states_.end(), [](int s) {
        return IsTerminal(static_cast<v1::JobState>(s));
      });
  return l;
}

bool JobListing::Wanted(const v1::Job& job) const {
  v1::JobState s = job.state();
  if (!states_.empty() ? !states_.count(s) : (!req_.all() && IsTerminal(s))) return false;
  return req_.tenant().empty() || job.spec().tenant() == req_.tenant();
}

JobListing::Position JobListing::PositionOf(const v1::Job& job) const {
  v1::JobState s = job.state();
  if (IsTerminal(s)) return Position(kFinished, 0, 0, job.id());
  const PriorityClass* c = policy_->Find(job.spec().priority_class());
  return Position(s == v1::JOB_STATE_PENDING || s == v1::JOB_STATE_COOLDOWN,
                  c ? -int64_t{c->value} : 0, job.submitted_ms(), job.id());
}

bool JobListing::PageFull(size_t jobs, size_t bytes) const {
  return (req_.limit() > 0 && jobs >= req_.limit()) || (jobs > 0 && bytes >= kListPageBytes);
}

void JobListing::Consider(const v1::Job& job) {
  if (!Wanted(job)) return;
  Position at = PositionOf(job);
  if (!after_ || at > *after_) memory_.emplace_back(at, &job);
}

void JobListing::Take(const Copy& copy) {
  std::sort(memory_.begin(), memory_.end(), kByPosition);
  size_t bytes = 0;
  for (const auto& [at, job] : memory_) {
    bool full = PageFull(picked_.size(), bytes);
    picked_.emplace_back(at, copy(*job));  // when full: the first of the next page
    if (full) break;
    bytes += picked_.back().second.ByteSizeLong();
  }
  memory_.clear();
}

absl::Status JobListing::ReadStore(const Scan& scan) {
  if (!finished_wanted_) return absl::OkStatus();
  size_t n = 0, bytes = 0;
  std::set<uint64_t> in_memory;  // finished jobs taken from memory
  for (const auto& [at, job] : picked_) {
    if (std::get<0>(at) == kFinished) {
      in_memory.insert(job.id());
    } else {
      ++n;
      bytes += job.ByteSizeLong();
    }
  }
  // Also when the page is full of unfinished jobs: is there a next page?
  uint64_t after_id = after_ && std::get<0>(*after_) == kFinished ? std::get<3>(*after_) : 0;
  std::optional<uint64_t> stopped_at;  // the scan's last id, when it stopped early
  absl::Status s = scan(after_id, [&](v1::Job job) {
    if (!Wanted(job) || in_memory.count(job.id())) return true;
    bool last = PageFull(n, bytes);  // one past the page: another page follows
    ++n;
    bytes += job.ByteSizeLong();
    if (last) stopped_at = job.id();
    picked_.emplace_back(PositionOf(job), std::move(job));
    return !last;
  });
  if (!s.ok()) return s;
  if (stopped_at) {
    // Finished jobs in memory past where the scan stopped wait for the next page, so that
    // none of the stored ones before them is skipped.
    std::erase_if(picked_, [&](const auto& p) {
      return std::get<0>(p.first) == kFinished && p.second.id() > *stopped_at;
    });
  }
  return absl::OkStatus();
}

v1::ListResponse JobListing::Page(const Caller& caller) {
  std::sort(picked_.begin(), picked_.end(), kByPosition);
  v1::ListResponse out;
  size_t bytes = 0;
  for (size_t i = 0; i < picked_.size(); ++i) {
    if (PageFull(static_cast<size_t>(out.jobs_size()), bytes)) {
      out.set_next_page_token(EncodeToken(picked_[i - 1].first));
      break;
    }
    v1::Job* job = out.add_jobs();
    *job = access::ForViewer(policy_->access, caller, std::move(picked_[i].second));
    bytes += job->ByteSizeLong();
  }
  picked_.clear();
  return out;
}

}  // namespace baton
