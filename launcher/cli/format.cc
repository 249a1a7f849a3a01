#include "launcher/cli/format.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "absl/strings/str_join.h"
#include "common/resources.h"
#include "proto/rpc_util.h"

namespace baton::cli {

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string ToJson(const google::protobuf::Message& msg) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  opts.always_print_enums_as_ints = false;
  (void)google::protobuf::util::MessageToJsonString(msg, &out, opts);
  return out;
}

std::string Ago(int64_t unix_ms, int64_t now_ms) {
  if (unix_ms == 0) return "-";
  return FormatDurationMs(now_ms - unix_ms) + " ago";
}

namespace {

std::string Placement(const v1::Attempt& a) {
  std::string out;
  for (const auto& p : a.placement()) {
    out += (out.empty() ? "" : ", ") + p.node();
    if (p.gpu_ids_size() > 0) out += " (" + std::to_string(p.gpu_ids_size()) + " GPUs)";
  }
  return out;
}

const v1::IsolationLimits* LimitsOn(const v1::Attempt& a, const std::string& node) {
  for (const auto& iso : a.isolation()) {
    if (iso.node() == node) return &iso.limits();
  }
  return nullptr;
}

}  // namespace

std::string DescribeRankBindings(const v1::Attempt& a) {
  std::string out;
  for (const auto& p : a.placement()) {
    const v1::IsolationLimits* applied = LimitsOn(a, p.node());
    int n = std::max(p.ranks_size(), applied ? applied->ranks_size() : 0);
    std::string line;
    for (int r = 0; r < n; ++r) {
      bool bound = applied && r < applied->ranks_size();
      int32_t numa = bound ? applied->ranks(r).numa() : p.ranks(r).numa();
      line += (r ? "; " : "") + std::string("rank ") + std::to_string(p.first_rank() + r) +
              (numa >= 0 ? " numa " + std::to_string(numa) : std::string(" spans"));
      if (bound) {
        line += " cpus " + applied->ranks(r).cpus() + " mems " + applied->ranks(r).mems();
      } else if (r < p.ranks_size() && p.ranks(r).cpus_size() > 0) {
        line += " cpus " + absl::StrJoin(p.ranks(r).cpus(), ",") + " (charged)";
      }
    }
    if (!line.empty()) out += p.node() + ": " + line + "\n";
  }
  return out;
}

std::string AfterText(const v1::JobSpec& spec,
                      const google::protobuf::RepeatedField<uint32_t>& met) {
  std::string out;
  for (int i = 0; i < spec.after_size(); ++i) {
    const bool done = std::find(met.begin(), met.end(), static_cast<uint32_t>(i)) != met.end();
    out += (i ? ", " : "") + DependencyName(spec.after(i)) + (done ? " (met)" : "");
  }
  return out;
}

std::string DescribeJob(const v1::Job& job, int64_t now_ms) {
  const v1::JobSpec& s = job.spec();
  std::ostringstream o;
  o << "Job " << job.id() << " (" << s.name() << ")\n";
  o << "  State:      " << StateName(job.state());
  if (!job.message().empty()) o << " — " << job.message();
  o << "\n";
  if (IsTerminal(job.state())) o << "  Exit code:  " << job.exit_code() << "\n";
  if (!job.cancel_requested_by().empty() && !IsTerminal(job.state())) {
    o << "  Stopping:   " << job.cancel_reason() << "\n";
  }
  if (job.has_hold()) {
    const v1::JobHold& h = job.hold();
    o << "  Held:       by " << h.by() << (h.by_admin() ? " (an admin's hold)" : "") << " "
      << Ago(h.at_ms(), now_ms) << (h.reason().empty() ? "" : ": " + h.reason())
      << "; baton release " << job.id() << " lets it start\n";
  }
  if (job.spec().after_size() > 0)
    o << "  After:      " << AfterText(job.spec(), job.after_met()) << "\n";
  if (job.cooldown_until_ms() > now_ms) {
    o << "  Waits:      " << FormatDurationMs(job.cooldown_until_ms() - now_ms)
      << " more before it may start again\n";
  }
  o << "  Tenant:     " << s.tenant() << "   user " << job.user() << "   class "
    << s.priority_class() << "\n";
  // A share: "a 25% share of a GPU with 20Gi" where the GPUs would be.
  const std::string gpus = s.gpu_share_percent() > 0
                               ? "a " + std::to_string(s.gpu_share_percent()) +
                                     "% share of a GPU with " + FormatBytes(s.gpu_memory_bytes())
                               : std::to_string(s.gpus_per_node()) + " GPU(s)";
  o << "  Shape:      " << s.nodes() << " node(s) x " << s.ranks_per_node() << " rank(s), " << gpus
    << ", " << FormatCpuMillis(s.cpu_millis_per_node()) << " CPUs, "
    << FormatBytes(s.memory_bytes_per_node()) << " memory per node; mode "
    << LaunchModeName(s.launch_mode()) << "\n";
  std::string cmd;
  for (const auto& a : s.command()) cmd += (cmd.empty() ? "" : " ") + a;
  o << "  Command:    " << cmd << "\n";
  o << "  Submitted:  " << Ago(job.submitted_ms(), now_ms) << "   restarts "
    << RestartPolicyName(s.restart_policy());
  if (s.restart_policy() == v1::RESTART_POLICY_ALWAYS) {
    // A service: every exit restarts it; failures are its non-zero exits, no budget.
    o << " (" << job.restarts_in_a_row() << " in a row, failures " << job.failures()
      << ", evictions " << job.evictions() << ")\n";
  } else {
    o << " (failures " << job.failures() << "/" << s.max_restarts() << ", evictions "
      << job.evictions() << ")\n";
  }
  if (job.attempts_size() > 0) {
    o << "  Attempts:\n";
    for (const auto& a : job.attempts()) {
      o << "    #" << a.number() << "  on " << Placement(a) << "  started "
        << Ago(a.started_ms(), now_ms);
      if (a.ended_ms()) {
        o << ", ran "
          << FormatDurationMs(a.ended_ms() - (a.started_ms() ? a.started_ms() : a.scheduled_ms()))
          << ", " << a.end_reason();
      }
      if (a.checkpoint_step() >= 0) o << ", checkpoint step " << a.checkpoint_step();
      o << "\n";
      if (a.evicted_for() != 0) o << "        " << DescribeEviction(a, job.spec()) << "\n";
      if (!a.run_as().empty()) {
        o << "        ran as " << a.run_as() << " (its class's MPS service user)\n";
      }
      if (a.topology_domains_size() > 0) {
        std::string domains;
        for (const auto& d : a.topology_domains()) domains += (domains.empty() ? "" : ", ") + d;
        o << "        topology: spans " << domains;
        if (a.topology_domains_size() > static_cast<int>(a.topology_min_domains())) {
          o << " (" << a.topology_domains_size() << " domains; " << a.topology_min_domains()
            << " at best)";
        }
        o << "\n";
      }
      std::istringstream bindings(DescribeRankBindings(a));
      for (std::string line; std::getline(bindings, line);) o << "        " << line << "\n";
      for (const auto& iso : a.isolation()) {
        if (iso.limits().cgroup().empty() && iso.limits().gpu_sharing().empty()) continue;
        o << "        " << iso.node() << ": " << DescribeLimits(iso.limits()) << "\n";
        o << "        " << std::string(iso.node().size(), ' ') << "  "
          << DescribeThrottling(iso.stats()) << "\n";
      }
    }
  }
  if (job.events_size() > 0) {
    o << "  Events:\n";
    for (const auto& e : job.events()) {
      o << "    " << Ago(e.time_ms(), now_ms) << "  "
        << (e.from() == v1::JOB_STATE_UNSPECIFIED ? "new" : StateName(e.from())) << " -> "
        << StateName(e.to()) << "  " << e.reason() << "  (" << e.actor() << ")\n";
    }
  }
  return o.str();
}

std::string DescribeEviction(const v1::Attempt& a, const v1::JobSpec& spec) {
  std::ostringstream o;
  o << "evicted for job " << a.evicted_for() << ": ";
  if (a.ended_ms() == 0) {
    o << "checkpointing; killed if still running "
      << FormatDurationMs(std::max<int64_t>(0, a.preempt_deadline_ms() - a.preempted_ms()))
      << " after the signal";
  } else {
    char lost[32];
    std::snprintf(lost, sizeof lost, "%.1f", a.lost_gpu_seconds());
    o << "lost " << lost << " GPU-seconds; "
      << (a.checkpoint_step() >= 0 ? "resumes from step " + std::to_string(a.checkpoint_step())
          : a.reports_progress()
              ? std::string("resumes from the beginning")
              : std::string("checkpoint unknown: the job does not report progress"));
  }
  int64_t base = a.preempted_ms() + int64_t{spec.grace_seconds()} * 1000;
  if (a.preempted_ms() != 0 && a.preempt_deadline_ms() > base) {
    o << " (grace extended by " << FormatDurationMs(a.preempt_deadline_ms() - base)
      << " while checkpointing)";
  }
  return o.str();
}

namespace {

// "2024-05-03 10:22:01.123", local time.
std::string LocalTime(int64_t unix_ms) {
  time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03d", static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string EventLine(const v1::Event& e) {
  std::string subject = e.job_id()            ? "job " + std::to_string(e.job_id())
                        : !e.node().empty()   ? "node " + e.node()
                        : !e.tenant().empty() ? "tenant " + e.tenant()
                                              : "-";
  std::string what;
  bool transition = e.kind() == v1::EVENT_KIND_TRANSITION || e.kind() == v1::EVENT_KIND_UNSPECIFIED;
  if (transition && e.from() != e.to()) {
    what = (e.from() == v1::JOB_STATE_UNSPECIFIED ? "new" : StateName(e.from())) + " -> " +
           StateName(e.to()) + ": ";
  } else if (!e.code().empty() && e.reason().find(e.code()) == std::string::npos) {
    what = e.code() + ": ";
  }
  return Pad("#" + std::to_string(e.log_seq()), 7) + " " + LocalTime(e.time_ms()) + "  " +
         Pad(EventKindName(e.kind()), 13) + " " + Pad(subject, 10) + " " + what + e.reason() +
         (e.actor().empty() ? "" : "  (" + e.actor() + ")");
}

std::string DescribeLimits(const v1::IsolationLimits& l) {
  std::ostringstream o;
  o << (l.kind() == v1::WORKLOAD_KIND_INFERENCE ? "inference" : "training");
  if (!l.cpus().empty()) {
    o << ", cpus " << l.cpus() << (l.exclusive_cpus() ? " (exclusive)" : "");
    if (l.narrowed_cpus()) o << " (" << l.narrowed_cpus() << " held by inference)";
  }
  o << ", quota " << (l.cpu_quota_millis() ? FormatCpuMillis(l.cpu_quota_millis()) : "none");
  if (l.cpu_weight()) o << ", weight " << l.cpu_weight();
  o << ", memory "
    << (l.memory_limit_bytes() ? FormatBytes(l.memory_limit_bytes()) : std::string("unlimited"));
  if (l.net_ceil_mbps())
    o << ", net <= " << l.net_ceil_mbps() << " Mbit/s (" << l.net_class() << ")";
  if (!l.gpu_sharing().empty()) o << ", gpu " << l.gpu_sharing();
  if (l.pids_limit()) o << ", pids <= " << l.pids_limit();
  if (l.fenced_gpus()) o << ", " << l.fenced_gpus() << " other GPU(s) fenced";
  return o.str();
}

std::string DescribeThrottling(const v1::IsolationStats& s) {
  std::ostringstream o;
  o << "throttled " << s.nr_throttled() << "/" << s.nr_periods() << " periods ("
    << FormatDurationMs(static_cast<int64_t>(s.throttled_us() / 1000)) << "), cpu "
    << FormatDurationMs(static_cast<int64_t>(s.cpu_usage_us() / 1000)) << ", peak memory "
    << FormatBytes(s.memory_peak_bytes());
  if (s.net_bytes()) o << ", net sent " << FormatBytes(s.net_bytes());
  if (s.net_overlimits()) o << " (" << s.net_overlimits() << " held at the ceiling)";
  return o.str();
}

std::string LimitsTable(const std::vector<v1::Node>& nodes) {
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "JOB", "KIND", "CPUS", "QUOTA", "MEMORY", "NET", "THROTTLED", "PEAK MEMORY"}};
  for (const auto& n : nodes) {
    for (const auto& a : n.attempts()) {
      const auto& l = a.limits();
      const auto& s = a.stats();
      if (l.cgroup().empty()) continue;
      rows.push_back({n.name(), std::to_string(a.job_id()) + "#" + std::to_string(a.attempt()),
                      l.kind() == v1::WORKLOAD_KIND_INFERENCE ? "inference" : "training",
                      l.cpus() + (l.exclusive_cpus() ? " (excl)" : ""),
                      l.cpu_quota_millis() ? FormatCpuMillis(l.cpu_quota_millis()) : "-",
                      l.memory_limit_bytes() ? FormatBytes(l.memory_limit_bytes()) : "-",
                      l.net_ceil_mbps() ? std::to_string(l.net_ceil_mbps()) + "Mbit" : "-",
                      std::to_string(s.nr_throttled()) + "/" + std::to_string(s.nr_periods()),
                      FormatBytes(s.memory_peak_bytes())});
    }
  }
  return rows.size() == 1 ? "" : Table(rows);
}

}  // namespace baton::cli
