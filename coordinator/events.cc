#include "coordinator/events.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace baton::events {
namespace {

constexpr size_t kMaxText = 1024;  // refused specs echo user input: keep records small

v1::Event About(const v1::Job& job, v1::EventKind kind, const std::string& code,
                const std::string& text) {
  v1::Event ev;
  ev.set_kind(kind);
  ev.set_job_id(job.id());
  ev.set_attempt(job.attempts_size());
  ev.set_from(job.state());
  ev.set_to(job.state());
  ev.set_code(code);
  ev.set_reason(text);
  ev.set_tenant(job.spec().tenant());
  ev.set_priority_class(job.spec().priority_class());
  return ev;
}

std::string Clip(const std::string& s) {
  return s.size() <= kMaxText ? s : s.substr(0, kMaxText - 3) + "...";
}

// "spec.gpus_per_node" for a field error, else the status code ("permission_denied").
std::string RefusalCode(const absl::Status& why) {
  std::string msg(why.message());
  size_t colon = msg.find(':');
  if (msg.rfind("spec.", 0) == 0 && colon != std::string::npos && colon <= 40 &&
      msg.find(' ') > colon) {
    return msg.substr(0, colon);
  }
  std::string code = absl::StatusCodeToString(why.code());
  std::transform(code.begin(), code.end(), code.begin(),
                 [](unsigned char c) { return c == ' ' ? '_' : std::tolower(c); });
  return code;
}

}  // namespace

v1::Event Scheduling(const v1::Job& job, const std::string& code, const std::string& text) {
  v1::Event ev = About(job, v1::EVENT_KIND_SCHEDULING, code, text);
  ev.set_actor("scheduler");
  return ev;
}

v1::Event Eviction(const v1::Job& job, const std::string& reason, const std::string& why,
                   int64_t now_ms) {
  double lost = LostGpuSeconds(job, now_ms);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", lost);
  v1::Event ev =
      About(job, v1::EVENT_KIND_EVICTION, reason,
            "attempt " + std::to_string(job.attempts_size()) + " evicted (" + reason + "): " + why +
                "; " + buf + " GPU-seconds since its last checkpoint lost");
  ev.set_actor("coordinator");
  ev.set_lost_gpu_seconds(lost);
  return ev;
}

v1::Event Refusal(const Caller& caller, const v1::JobSpec& spec, const absl::Status& why) {
  v1::Event ev;
  ev.set_kind(v1::EVENT_KIND_QUOTA_REFUSAL);
  ev.set_code(RefusalCode(why));
  ev.set_actor(caller.user);
  ev.set_tenant(Clip(spec.tenant()));
  ev.set_priority_class(Clip(spec.priority_class()));
  std::string asked = spec.tenant().empty() ? "" : " for tenant '" + spec.tenant() + "'";
  ev.set_reason(
      Clip("submit by " + caller.user + asked + " refused: " + std::string(why.message())));
  return ev;
}

v1::Event PolicyChange(const std::string& actor, const std::string& summary) {
  v1::Event ev;
  ev.set_kind(v1::EVENT_KIND_POLICY);
  ev.set_code("policy_changed");
  ev.set_actor(actor);
  ev.set_reason(Clip(summary));
  return ev;
}

v1::Event AccessChange(const std::string& actor, const std::string& code,
                       const std::string& summary) {
  v1::Event ev;
  ev.set_kind(v1::EVENT_KIND_POLICY);
  ev.set_code(code);
  ev.set_actor(actor);
  ev.set_reason(Clip(summary));
  return ev;
}

v1::Event NodeChange(const v1::Node& node, const std::string& code, const std::string& text,
                     const std::string& actor) {
  v1::Event ev;
  ev.set_kind(v1::EVENT_KIND_NODE);
  ev.set_code(code);
  ev.set_node(node.name());
  ev.set_node_state(node.state());
  ev.set_actor(!actor.empty() ? actor : code == "lost" ? "coordinator" : "agent:" + node.name());
  ev.set_reason(text);
  return ev;
}

int64_t CheckpointTimeMs(const v1::Attempt& a, int64_t reported_ms, int64_t now_ms) {
  if (reported_ms <= 0) return now_ms;
  int64_t earliest = std::max(a.started_ms(), a.checkpoint_time_ms());
  return std::min(now_ms, std::max(earliest, reported_ms));
}

absl::Time Ended(const v1::Attempt& a, size_t nodes,
                 const std::map<std::string, absl::Time>& reported, absl::Time now) {
  if (nodes == 0 || reported.size() < nodes) return now;
  absl::Time last = absl::InfinitePast();
  for (const auto& [node, t] : reported) last = std::max(last, t);
  return std::min(now, std::max(absl::FromUnixMillis(a.started_ms()), last));
}

double LostGpuSeconds(const v1::Job& job, int64_t now_ms) {
  if (job.attempts_size() == 0) return 0;
  const v1::Attempt& a = *job.attempts().rbegin();
  if (a.started_ms() == 0) return 0;
  // An evicted attempt that exited cleanly after a checkpoint committed during the
  // eviction kept the contract (stop, save, exit): that save holds all its work.
  bool saved_on_eviction = a.preempted_ms() != 0 && a.checkpoint_step() >= 0 &&
                           a.checkpoint_time_ms() >= a.preempted_ms();
  if (a.ended_ms() != 0 && saved_on_eviction && a.exit_code() == 0 && a.term_signal() == 0) {
    return 0;
  }
  int64_t since = std::max(a.started_ms(), a.checkpoint_time_ms());
  int64_t until = a.ended_ms() ? a.ended_ms() : now_ms;
  size_t gpus = 0;
  for (const auto& p : a.placement()) gpus += p.gpu_ids_size();
  return until > since ? static_cast<double>(gpus) * static_cast<double>(until - since) / 1000.0
                       : 0.0;
}

}  // namespace baton::events
