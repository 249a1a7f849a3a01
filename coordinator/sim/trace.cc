#include "coordinator/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/ids.h"
#include "common/resources.h"
#include "nlohmann/json.hpp"

namespace baton::sim {
namespace {

constexpr size_t kMaxProblems = 20;
constexpr uint64_t kMaxJobs = 10'000'000;
constexpr Time kMaxTimeMs = 365ll * 24 * 3600 * 1000;  // a year

const std::vector<std::string>& Required() {
  static const std::vector<std::string> k = {
      "submit", "tenant", "class", "nodes", "gpus_per_node", "duration", "checkpoint_interval"};
  return k;
}
const std::vector<std::string>& Optional() {
  static const std::vector<std::string> k = {"id",
                                             "checkpoint_cost",
                                             "restart_cost",
                                             "pool",
                                             "cpus_per_node",
                                             "memory_per_node",
                                             "mig_profile",
                                             "gpu_model",
                                             "gpu_share",
                                             "gpu_memory",
                                             "user"};
  return k;
}

bool Known(const std::string& c) {
  return std::count(Required().begin(), Required().end(), c) ||
         std::count(Optional().begin(), Optional().end(), c);
}

std::string KnownList() {
  std::string out;
  for (const auto* list : {&Required(), &Optional()}) {
    for (const std::string& c : *list) out += (out.empty() ? "" : ", ") + c;
  }
  return out;
}

class TraceProblems {
 public:
  explicit TraceProblems(std::string source) : source_(std::move(source)) {}
  void Add(int line, const std::string& column, const std::string& what) {
    ++count_;
    if (list_.size() < kMaxProblems) {
      list_.push_back(source_ + ":" + std::to_string(line) + ": " +
                      (column.empty() ? "" : column + ": ") + what);
    }
  }
  bool empty() const { return count_ == 0; }
  absl::Status ToStatus() const {
    if (count_ == 0) return absl::OkStatus();
    std::string text;
    for (const std::string& p : list_) text += (text.empty() ? "" : "\n") + p;
    if (count_ > list_.size()) {
      text += "\n... and " + std::to_string(count_ - list_.size()) + " more";
    }
    return absl::InvalidArgumentError(text);
  }

 private:
  std::string source_;
  std::vector<std::string> list_;
  size_t count_ = 0;
};

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// Seconds as a number ("90", "1.5") or a duration ("15m"), as milliseconds.
bool ParseSeconds(const std::string& text, Time* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end && *end == '\0') {
    if (!std::isfinite(v) || v < 0 || v * 1000 > static_cast<double>(kMaxTimeMs)) return false;
    *out = static_cast<Time>(std::llround(v * 1000));
    return true;
  }
  if (!text.empty() && text[0] == '-') return false;
  absl::StatusOr<uint64_t> s = ParseDurationSeconds(text);
  if (!s.ok() || *s * 1000 > static_cast<uint64_t>(kMaxTimeMs)) return false;
  *out = static_cast<Time>(*s * 1000);
  return true;
}

bool ParseCount(const std::string& text, uint64_t max, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = std::stoull(text);
  return *out <= max;
}

// One field into the job; a problem names the column.
void SetField(TraceJob& job, const std::string& column, const std::string& v, int line,
              TraceProblems& p) {
  auto time = [&](Time* out) {
    if (!ParseSeconds(v, out)) {
      p.Add(line, column, "'" + v + "' is not a time in seconds (at least 0, at most a year)");
    }
  };
  auto count = [&](uint64_t min, uint64_t max, auto* out) {
    uint64_t n = 0;
    if (!ParseCount(v, max, &n) || n < min) {
      p.Add(line, column,
            "'" + v + "' is not a whole number from " + std::to_string(min) + " to " +
                std::to_string(max));
      return;
    }
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(n);
  };
  auto name = [&](std::string* out) {
    if (!v.empty() && !IsValidName(v)) p.Add(line, column, "'" + v + "' is not a valid name");
    *out = v;
  };
  if (column == "submit") return time(&job.submit_ms);
  if (column == "duration") return time(&job.duration_ms);
  if (column == "checkpoint_interval") return time(&job.checkpoint_interval_ms);
  if (column == "checkpoint_cost") return time(&job.checkpoint_cost_ms);
  if (column == "restart_cost") return time(&job.restart_cost_ms);
  if (column == "nodes") return count(1, 100'000, &job.nodes);
  if (column == "gpus_per_node") return count(0, 64, &job.gpus_per_node);
  if (column == "id") return count(1, uint64_t{1} << 53, &job.id);
  if (column == "tenant") return name(&job.tenant);
  if (column == "class") return name(&job.priority_class);
  if (column == "pool") return name(&job.pool);
  if (column == "mig_profile") return void(job.mig_profile = v);
  if (column == "gpu_model") return void(job.gpu_model = v);
  if (column == "user") return name(&job.user);
  if (column == "gpu_share") {
    std::string n = v;
    if (!n.empty() && n.back() == '%') n.pop_back();
    uint64_t percent = 0;
    if (!ParseCount(n, 100, &percent) || percent == 0) {
      return p.Add(line, column, "'" + v + "' is not a share from 1 to 100%");
    }
    job.gpu_share_percent = static_cast<uint32_t>(percent);
    return;
  }
  if (column == "gpu_memory") {
    absl::StatusOr<uint64_t> q = ParseBytes(v);
    if (!q.ok() || *q == 0) return p.Add(line, column, "'" + v + "' is not a size");
    job.gpu_memory_bytes = *q;
    return;
  }
  if (column == "cpus_per_node" || column == "memory_per_node") {
    absl::StatusOr<uint64_t> q = column == "cpus_per_node" ? ParseCpuMillis(v) : ParseBytes(v);
    if (!q.ok()) return p.Add(line, column, "'" + v + "' is not a valid quantity");
    (column == "cpus_per_node" ? job.cpu_millis_per_node : job.memory_bytes_per_node) = *q;
  }
}

void Finish(TraceJob& job, const std::set<std::string>& given, int line, TraceProblems& p) {
  for (const std::string& c : Required()) {
    if (!given.count(c)) p.Add(line, c, "missing (a required column)");
  }
  if (given.count("tenant") && job.tenant.empty()) p.Add(line, "tenant", "empty");
  if (given.count("class") && job.priority_class.empty()) p.Add(line, "class", "empty");
  if (job.duration_ms == 0 && given.count("duration")) p.Add(line, "duration", "must be above 0");
  if (job.gpu_share_percent > 0) {
    if (job.gpu_memory_bytes == 0) p.Add(line, "gpu_share", "a share needs its gpu_memory");
    if (job.nodes != 1 || job.gpus_per_node != 1) {
      p.Add(line, "gpu_share", "a share is of one GPU on one node (nodes 1, gpus_per_node 1)");
    }
    if (!job.mig_profile.empty())
      p.Add(line, "gpu_share", "a share is of a whole GPU, not a slice");
  }
  job.line = line;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(Trim(field));
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

void ParseCsv(std::istream& in, TraceProblems& p, std::vector<TraceJob>& out) {
  std::string text;
  std::vector<std::string> header;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (Trim(text).empty() || Trim(text)[0] == '#') continue;
    std::vector<std::string> fields = SplitCsv(text);
    if (header.empty()) {
      header = fields;
      std::set<std::string> seen;
      for (const std::string& c : header) {
        if (!Known(c)) p.Add(line, "", "unknown column '" + c + "' (known: " + KnownList() + ")");
        if (!seen.insert(c).second) p.Add(line, "", "column '" + c + "' twice");
      }
      for (const std::string& c : Required()) {
        if (!seen.count(c)) p.Add(line, "", "the header lacks the required column '" + c + "'");
      }
      if (!p.empty()) return;
      continue;
    }
    if (fields.size() != header.size()) {
      p.Add(line, "",
            std::to_string(fields.size()) + " fields, the header has " +
                std::to_string(header.size()));
      continue;
    }
    TraceJob job;
    std::set<std::string> given;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].empty() && !std::count(Required().begin(), Required().end(), header[i])) {
        continue;
      }
      SetField(job, header[i], fields[i], line, p);
      given.insert(header[i]);
    }
    Finish(job, given, line, p);
    if (job.id == 0) job.id = out.size() + 1;
    out.push_back(std::move(job));
    if (out.size() > kMaxJobs) return p.Add(line, "", "more than 10,000,000 jobs");
  }
  if (header.empty()) p.Add(line, "", "no header row");
}

void ParseJsonl(std::istream& in, TraceProblems& p, std::vector<TraceJob>& out) {
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (Trim(text).empty()) continue;
    nlohmann::json obj = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!obj.is_object()) {
      p.Add(line, "", "not a JSON object");
      continue;
    }
    TraceJob job;
    std::set<std::string> given;
    for (const auto& [key, value] : obj.items()) {
      if (!Known(key)) {
        p.Add(line, key, "unknown key (known: " + KnownList() + ")");
        continue;
      }
      std::string v = value.is_string() ? value.get<std::string>() : value.dump();
      if (!value.is_string() && !value.is_number()) {
        p.Add(line, key, "expected a string or a number");
        continue;
      }
      SetField(job, key, v, line, p);
      given.insert(key);
    }
    Finish(job, given, line, p);
    if (job.id == 0) job.id = out.size() + 1;
    out.push_back(std::move(job));
    if (out.size() > kMaxJobs) return p.Add(line, "", "more than 10,000,000 jobs");
  }
}

// How many nodes of `pool` could hold one gang member of `job`.
uint32_t NodesThatFit(const TraceJob& job, const std::vector<sched::NodeInfo>& nodes,
                      const std::string& pool, const std::string& default_pool) {
  uint32_t n = 0;
  for (const sched::NodeInfo& node : nodes) {
    if ((node.pool.empty() ? default_pool : node.pool) != pool) continue;
    uint32_t gpus = 0;
    for (const sched::GpuInfo& g : node.gpus) {
      bool parent = false;
      if (job.mig_profile.empty()) {
        for (const sched::GpuInfo& s : node.gpus) parent = parent || s.parent_uuid == g.uuid;
      }
      if (g.mps != (job.gpu_share_percent > 0)) continue;  // pools take shares only
      if (g.mig_profile == job.mig_profile && !parent &&
          g.model.find(job.gpu_model) != std::string::npos) {
        ++gpus;
      }
    }
    if (gpus >= job.gpus_per_node) ++n;
  }
  return n;
}

}  // namespace

absl::StatusOr<std::vector<TraceJob>> ParseTrace(const std::string& text,
                                                 const std::string& source) {
  TraceProblems p(source);
  std::vector<TraceJob> jobs;
  std::istringstream in(text);
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    ParseJsonl(in, p, jobs);
  } else {
    ParseCsv(in, p, jobs);
  }
  if (absl::Status s = p.ToStatus(); !s.ok()) return s;
  if (jobs.empty()) return absl::InvalidArgumentError(source + ": no jobs");
  return jobs;
}

absl::StatusOr<std::vector<TraceJob>> LoadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("trace " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseTrace(text.str(), path);
}

void WriteTraceCsv(const std::vector<TraceJob>& jobs, std::ostream& out) {
  out << "id,submit,tenant,class,nodes,gpus_per_node,duration,checkpoint_interval,"
         "checkpoint_cost,restart_cost,pool,gpu_model,gpu_share,gpu_memory,user\n";
  auto s = [](Time ms) {
    std::ostringstream o;
    o << ms / 1000;
    if (ms % 1000) o << "." << std::to_string(1000 + ms % 1000).substr(1);
    return o.str();
  };
  for (const TraceJob& j : jobs) {
    out << j.id << "," << s(j.submit_ms) << "," << j.tenant << "," << j.priority_class << ","
        << j.nodes << "," << j.gpus_per_node << "," << s(j.duration_ms) << ","
        << s(j.checkpoint_interval_ms) << "," << s(j.checkpoint_cost_ms) << ","
        << s(j.restart_cost_ms) << "," << j.pool << "," << j.gpu_model << ","
        << (j.gpu_share_percent ? std::to_string(j.gpu_share_percent) : "") << ","
        << (j.gpu_memory_bytes ? std::to_string(j.gpu_memory_bytes) : "") << "," << j.user << "\n";
  }
}

absl::Status CheckTrace(const std::vector<TraceJob>& jobs, const std::string& source,
                        const std::vector<sched::NodeInfo>& nodes, const Policy& policy) {
  TraceProblems p(source);
  std::set<JobId> ids;
  std::map<std::tuple<std::string, uint32_t, std::string, std::string, bool>, uint32_t> fit;
  for (const TraceJob& j : jobs) {
    if (!ids.insert(j.id).second) p.Add(j.line, "id", std::to_string(j.id) + " is used twice");
    if (!policy.Find(j.priority_class)) {
      p.Add(j.line, "class", "'" + j.priority_class + "' is not a class of the policy");
    }
    std::string pool = j.pool.empty() ? policy.default_pool : j.pool;
    auto key =
        std::make_tuple(pool, j.gpus_per_node, j.mig_profile, j.gpu_model, j.gpu_share_percent > 0);
    auto it = fit.find(key);
    if (it == fit.end()) {
      it = fit.emplace(key, NodesThatFit(j, nodes, pool, policy.default_pool)).first;
    }
    if (it->second < j.nodes) {
      p.Add(j.line, "nodes",
            std::to_string(j.nodes) + " nodes with " + std::to_string(j.gpus_per_node) +
                (j.mig_profile.empty() ? " GPUs" : " " + j.mig_profile + " slices") +
                " each, but pool " + pool + " of the cluster has only " +
                std::to_string(it->second) + " such nodes: the job is bigger than the cluster");
    }
  }
  return p.ToStatus();
}

PoolTolerations TolerationsByPool(const std::vector<sched::NodeInfo>& nodes,
                                  const std::string& default_pool) {
  PoolTolerations out;
  std::set<std::pair<std::string, std::string>> seen;
  for (const sched::NodeInfo& n : nodes) {
    std::string pool = n.pool.empty() ? default_pool : n.pool;
    for (const sched::Taint& t : n.taints) {
      if (!seen.insert({pool, t.key + "\n" + t.value + "\n" + t.effect}).second) continue;
      out[pool].push_back(sched::Toleration{t.key, t.value, t.effect, false});
    }
  }
  return out;
}

sched::PendingJob ToPending(const TraceJob& job, const Policy& policy,
                            const PoolTolerations& tolerations) {
  sched::PendingJob p;
  p.id = job.id;
  p.tenant = job.tenant;
  p.priority_class = job.priority_class;
  p.submitted = job.submit_ms;
  sched::JobRequest& r = p.request;
  r.nodes = job.nodes;
  r.gpus_per_node = job.gpus_per_node;
  r.ranks_per_node = std::max<uint32_t>(job.gpus_per_node, 1);
  r.cpu_millis_per_node = job.cpu_millis_per_node
                              ? job.cpu_millis_per_node
                              : r.ranks_per_node * policy.default_cpu_millis_per_rank;
  r.memory_bytes_per_node = job.memory_bytes_per_node
                                ? job.memory_bytes_per_node
                                : r.ranks_per_node * policy.default_memory_bytes_per_rank;
  r.mig_profile = job.mig_profile;
  r.gpu_model = job.gpu_model;
  r.mpi = job.nodes > 1 && job.mig_profile.empty();
  r.gpu_share_percent = job.gpu_share_percent;
  r.gpu_memory_bytes = job.gpu_memory_bytes;
  p.user = job.user.empty() ? job.tenant : job.user;
  // A share of a class naming an MPS service user runs as it (as the coordinator places it).
  if (job.gpu_share_percent > 0) {
    if (std::string as = policy.ShareUser(job.priority_class); !as.empty()) p.user = std::move(as);
  }
  r.pool = job.pool;
  auto it = tolerations.find(job.pool.empty() ? policy.default_pool : job.pool);
  if (it != tolerations.end()) r.tolerations = it->second;
  return p;
}

SimWork WorkOf(const TraceJob& job) {
  return SimWork{job.duration_ms, job.checkpoint_interval_ms, job.checkpoint_cost_ms,
                 job.restart_cost_ms};
}

std::unique_ptr<Simulator> SimulateTrace(const std::vector<sched::NodeInfo>& nodes,
                                         const Policy& policy, const std::vector<TraceJob>& jobs,
                                         SimOptions options, Time drain_ms) {
  options.grace_ms = Time{policy.default_grace_seconds} * 1000;
  auto sim = std::make_unique<Simulator>(nodes, policy, options);
  PoolTolerations tolerations = TolerationsByPool(nodes, policy.default_pool);
  Time last = 0;
  for (const TraceJob& j : jobs) {
    sim->Submit(ToPending(j, policy, tolerations), WorkOf(j));
    last = std::max(last, j.submit_ms);
  }
  sim->RunToCompletion(last + drain_ms);
  return sim;
}

}  // namespace baton::sim
