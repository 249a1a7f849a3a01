// JobManager: accounting (issue 49, docs/accounting.md). Every commit charges the usage
// rollup with what its job changes add (usage::Rollup, from each job's mark to its record
// now), in the same store write; Tick deletes rollup days past --usage-retention; Usage and
// History read the store outside the lock.

#include "common/status.h"
#include "coordinator/access.h"
#include "coordinator/job_manager.h"
#include "coordinator/usage/report.h"
#include "coordinator/usage/rollup.h"

namespace baton {
namespace {

constexpr uint32_t kHistoryDefaultLimit = 1000;
constexpr uint32_t kHistoryMaxLimit = 10'000;

}  // namespace

void JobManager::ChargeUsageLocked(Txn& txn) {
  usage::Rollup rollup;
  for (uint64_t id : txn.touched) {
    JobEntry* e = jobs_.Find(id);
    if (e == nullptr) continue;
    e->charged = rollup.Charge(e->job, e->charged);
  }
  if (!rollup.empty()) {
    for (auto& d : rollup.Take()) txn.batch.usage_deltas.push_back(std::move(d));
  }
}

void JobManager::ExpireUsageLocked(absl::Time now, Txn& txn) {
  if (options_.usage_retention <= absl::ZeroDuration()) return;
  const int64_t before = usage::DayOf(absl::ToUnixMillis(now - options_.usage_retention));
  if (before <= usage_expired_before_) return;
  txn.batch.usage_before_day = before;
  usage_expired_before_ = before;
}

absl::StatusOr<v1::UsageResponse> JobManager::Usage(const Caller& caller,
                                                    const v1::UsageRequest& req) const {
  const std::shared_ptr<const Policy> pol = policy();
  const int64_t now = clock_->NowMs();
  const int64_t until = req.until_ms() == 0 ? now : req.until_ms();
  if (req.since_ms() < 0 || until <= req.since_ms()) {
    return absl::InvalidArgumentError("usage: the range is empty (since must be before until)");
  }
  if (!v1::UsageGroup_IsValid(req.by())) {
    return absl::InvalidArgumentError("usage: 'by' must be tenant, user or class");
  }
  // Members read their own tenants' usage; admins everyone's.
  std::set<std::string> tenants;
  const bool admin = access::IsAdmin(pol->access, caller);
  if (!req.tenant().empty()) {
    if (!admin && !access::IsMember(pol->access, caller, req.tenant())) {
      return absl::PermissionDeniedError("usage of tenant '" + req.tenant() +
                                         "' is readable by its members and admins only; " +
                                         caller.user + " is not a member");
    }
    tenants.insert(req.tenant());
  } else if (!admin) {
    for (std::string& t : access::TenantsOf(pol->access, caller)) tenants.insert(std::move(t));
    if (tenants.empty()) {
      return absl::PermissionDeniedError(caller.user +
                                         " is a member of no tenant: no usage to read");
    }
  }
  const int64_t first = usage::DayOf(req.since_ms());
  const int64_t last = usage::DayOf(until - 1);
  usage::Report report(req.by(), tenants);
  BATON_RETURN_IF_ERROR(store_->ScanUsage(
      first, last,
      [&](int64_t, const std::string& tenant, const v1::UsageRecord& rec) {
        report.Add(tenant, rec);
      },
      [&](std::string_view tenant) { return report.Wants(tenant); }));
  v1::UsageResponse out = report.Finish();
  out.set_since_ms(first * usage::kDayMs);
  out.set_until_ms((last + 1) * usage::kDayMs);
  for (const std::string& t : tenants) out.add_tenants(t);
  return out;
}

absl::StatusOr<v1::HistoryResponse> JobManager::History(const Caller& caller,
                                                        const v1::HistoryRequest& req) const {
  const std::shared_ptr<const Policy> pol = policy();
  EndedQuery q;
  q.since_ms = req.since_ms();
  q.until_ms = req.until_ms() == 0 ? clock_->NowMs() + 1 : req.until_ms();
  if (q.since_ms < 0 || q.until_ms <= q.since_ms) {
    return absl::InvalidArgumentError("history: the range is empty (since must be before until)");
  }
  q.user = req.user();
  q.tenant = req.tenant();
  for (int s : req.states()) {
    if (!v1::JobState_IsValid(s) || !IsTerminal(static_cast<v1::JobState>(s))) {
      return absl::InvalidArgumentError(
          "history: --state must be a finished state (succeeded, failed or cancelled), not " +
          v1::JobState_Name(static_cast<v1::JobState>(s)));
    }
    q.states |= 1u << s;
  }
  const uint32_t limit = req.limit() == 0 ? kHistoryDefaultLimit : req.limit();
  if (limit > kHistoryMaxLimit) {
    return absl::InvalidArgumentError("history: limit is at most " +
                                      std::to_string(kHistoryMaxLimit) + " (page with the token)");
  }
  if (!req.page_token().empty()) {
    // The token is the index key the last page ended at: "<20 digits>/<20 digits>".
    const std::string& t = req.page_token();
    if (t.size() != 41 || t[20] != '/' || t.find_first_not_of("0123456789/") != std::string::npos) {
      return absl::InvalidArgumentError("history: page_token is not one this server gave");
    }
    q.before_key = t;
  }
  v1::HistoryResponse out;
  std::string last_key;
  BATON_RETURN_IF_ERROR(store_->ScanEnded(q, [&](const std::string& key, v1::Job job) {
    if (static_cast<uint32_t>(out.jobs_size()) == limit) {
      out.set_next_page_token(last_key);
      return false;
    }
    *out.add_jobs() = access::ForViewer(pol->access, caller, std::move(job));
    last_key = key;
    return true;
  }));
  return out;
}

}  // namespace baton
