#include "coordinator/sim/generate.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <map>
#include <numbers>
#include <random>
#include <sstream>

namespace baton::sim {
namespace {

constexpr Time kMinute = 60'000;
constexpr Time kHour = 60 * kMinute;
constexpr Time kDay = 24 * kHour;

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double Uniform() { return std::uniform_real_distribution<double>(0, 1)(gen_); }
  double LogNormal(double median, double sigma) {
    return median * std::exp(sigma * std::normal_distribution<double>(0, 1)(gen_));
  }
  // Index by weight.
  size_t Pick(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = Uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if ((x -= weights[i]) < 0) return i;
    }
    return weights.size() - 1;
  }

 private:
  std::mt19937_64 gen_;
};

// Submissions follow the day: busiest mid-afternoon, quietest before dawn (thinning).
Time DiurnalTime(Rng& rng, Time span) {
  while (true) {
    Time t = static_cast<Time>(rng.Uniform() * static_cast<double>(span));
    double phase = static_cast<double>(t % kDay) / static_cast<double>(kDay);
    double rate = 1 + 0.6 * std::sin(2 * std::numbers::pi * (phase - 0.375));
    if (rng.Uniform() * 1.6 < rate) return t;
  }
}

std::string TenantName(uint32_t i) {
  std::string s = "team-";
  if (i >= 26) s += static_cast<char>('a' + i / 26 - 1);
  return s + static_cast<char>('a' + i % 26);
}

// Most jobs take one GPU; a few are multi-node gangs (Philly: ~70% 1 GPU, the big gangs
// few but a large part of the GPU time).
void Shape(Rng& rng, const SyntheticOptions& o, TraceJob& j) {
  static const std::vector<double> kSizes = {0.70, 0.08, 0.08, 0.09, 0.05};
  uint32_t per = std::max<uint32_t>(o.gpus_per_node, 1);
  switch (rng.Pick(kSizes)) {
    case 0:
      j.gpus_per_node = 1;
      break;
    case 1:
      j.gpus_per_node = std::min<uint32_t>(2, per);
      break;
    case 2:
      j.gpus_per_node = std::min<uint32_t>(4, per);
      break;
    case 3:
      j.gpus_per_node = per;
      break;
    default: {
      std::vector<uint32_t> spans;
      for (uint32_t n = 2; n <= std::max<uint32_t>(o.max_gang_nodes, 2); n *= 2) spans.push_back(n);
      std::vector<double> w;
      for (size_t i = 0; i < spans.size(); ++i) w.push_back(std::pow(0.5, static_cast<double>(i)));
      j.nodes = std::min(spans[rng.Pick(w)], std::max<uint32_t>(o.max_gang_nodes, 1));
      j.gpus_per_node = per;
    }
  }
}

void AddInference(const SyntheticOptions& o, Time span, uint64_t& next,
                  std::vector<TraceJob>& out) {
  for (uint32_t s = 0; s < o.services; ++s) {
    auto replica = [&](Time at, Time duration) {
      TraceJob j;
      j.id = next++;
      j.submit_ms = at;
      j.tenant = "serving";
      j.priority_class = "inference";
      j.duration_ms = duration;
      j.pool = o.inference_pool;
      out.push_back(j);
    };
    for (uint32_t r = 0; r < o.base_replicas; ++r) replica(0, span);
    // The daily peak: replicas added from 08:00 (staggered by service) for ten hours.
    for (Time day = 0; day < span; day += kDay) {
      for (uint32_t r = 0; r < o.peak_replicas; ++r) {
        Time at = day + 8 * kHour + s * 10 * kMinute + r * 5 * kMinute;
        if (at < span) replica(at, 10 * kHour);
      }
    }
  }
}

}  // namespace

std::vector<TraceJob> GenerateTrace(const SyntheticOptions& o) {
  Rng rng(o.seed);
  Time span = std::max<Time>(static_cast<Time>(o.days * static_cast<double>(kDay)), kHour);
  std::vector<double> tenant_weights;
  for (uint32_t t = 0; t < std::max<uint32_t>(o.tenants, 1); ++t) {
    tenant_weights.push_back(1.0 / (t + 1));
  }
  static const std::vector<double> kClasses = {0.65, 0.30, 0.05};
  static const char* kClassNames[] = {"training", "experiment", "labeling"};
  std::vector<TraceJob> jobs;
  double gpu_ms = 0;
  for (uint64_t i = 0; i < o.jobs; ++i) {
    TraceJob j;
    j.submit_ms = DiurnalTime(rng, span);
    j.tenant = TenantName(static_cast<uint32_t>(rng.Pick(tenant_weights)));
    size_t cls = rng.Pick(kClasses);
    j.priority_class = kClassNames[cls];
    Shape(rng, o, j);
    uint32_t gpus = j.nodes * j.gpus_per_node;
    // Log-normal, median 30 min, sigma 1.6: the mean is ~3.6x the median; big gangs run
    // longer. Capped at three days before scaling.
    double d = std::min(rng.LogNormal(30.0 * kMinute, 1.6), 3.0 * kDay);
    d *= 1 + std::log2(static_cast<double>(gpus)) / 2;
    j.duration_ms = static_cast<Time>(d);
    gpu_ms += d * gpus;
    j.checkpoint_interval_ms = cls == 0   ? o.checkpoint_interval_ms
                               : cls == 2 ? o.checkpoint_interval_ms / 2
                                          : 0;
    j.checkpoint_cost_ms = cls == 1 ? 0 : (gpus > 8 ? 30'000 : 10'000);
    j.restart_cost_ms = gpus > 8 ? 120'000 : 30'000;
    jobs.push_back(std::move(j));
  }
  // Scale the durations so that the batch jobs offer `load` of the cluster over the span.
  double target = o.load * o.cluster_gpus * static_cast<double>(span);
  double scale = gpu_ms > 0 ? target / gpu_ms : 1;
  for (TraceJob& j : jobs) {
    j.duration_ms =
        std::max<Time>(static_cast<Time>(static_cast<double>(j.duration_ms) * scale), kMinute);
  }
  std::sort(jobs.begin(), jobs.end(),
            [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  uint64_t next = 1;
  for (TraceJob& j : jobs) j.id = next++;
  AddInference(o, span, next, jobs);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  return jobs;
}

namespace {

struct Columns {
  int submit = -1, gpus = -1, duration = -1, tenant = -1, user = -1, nodes = -1, state = -1,
      id = -1;
};

int Find(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = std::find(header.begin(), header.end(), n);
    if (it != header.end()) return static_cast<int>(it - header.begin());
  }
  return -1;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::string f;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(f);
      f.clear();
    } else if (c != '\r') {
      f += c;
    }
  }
  out.push_back(f);
  return out;
}

// Seconds since the epoch: a number, or "YYYY-MM-DD HH:MM:SS" (UTC; the logs give local
// time of one site, and only differences matter).
bool ParseWhen(const std::string& s, double* out) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') {
    *out = v;
    return std::isfinite(v);
  }
  std::tm tm{};
  std::istringstream in(s);
  in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S");
  if (in.fail()) return false;
  *out = static_cast<double>(timegm(&tm));
  return true;
}

}  // namespace

absl::StatusOr<std::vector<TraceJob>> ConvertJobLog(const std::string& csv,
                                                    const std::string& source,
                                                    const ConvertOptions& o) {
  std::istringstream in(csv);
  std::string line;
  if (!std::getline(in, line)) return absl::InvalidArgumentError(source + ": empty");
  std::vector<std::string> header = Split(line);
  Columns c;
  bool helios = o.format == LogFormat::kHelios;
  c.submit = Find(header, {"submit_time", "submitted_time", "submit"});
  c.gpus = Find(header, {"gpu_num", "num_gpus", "gpus"});
  c.duration = Find(header, {"duration", "run_time", "runtime"});
  c.tenant = Find(header, {"vc", "virtual_cluster"});
  c.user = Find(header, {"user"});
  c.nodes = Find(header, {"node_num", "num_nodes"});
  c.state = Find(header, {"state", "status"});
  c.id = Find(header, helios ? std::initializer_list<const char*>{"job_id", "jobid"}
                             : std::initializer_list<const char*>{"jobid", "job_id"});
  for (auto [col, name] : {std::pair{c.submit, "submit_time"},
                           {c.gpus, helios ? "gpu_num" : "num_gpus"},
                           {c.duration, helios ? "duration" : "run_time"}}) {
    if (col < 0) {
      return absl::InvalidArgumentError(source + ":1: the header lacks the column " + name);
    }
  }
  if (c.tenant < 0 && c.user < 0) {
    return absl::InvalidArgumentError(source + ":1: the header lacks vc (or user)");
  }
  std::vector<TraceJob> out;
  std::vector<double> submits;
  int n = 1;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> f = Split(line);
    if (f.size() != header.size()) {
      return absl::InvalidArgumentError(source + ":" + std::to_string(n) + ": " +
                                        std::to_string(f.size()) + " fields, the header has " +
                                        std::to_string(header.size()));
    }
    auto bad = [&](int col, const std::string& what) {
      return absl::InvalidArgumentError(source + ":" + std::to_string(n) + ": " + header[col] +
                                        ": '" + f[col] + "' " + what);
    };
    std::string state = c.state >= 0 ? f[c.state] : "";
    std::transform(state.begin(), state.end(), state.begin(), ::tolower);
    if (!o.keep_failed && !state.empty() && state != "completed" && state != "pass") continue;
    double submit = 0, duration = 0;
    if (!ParseWhen(f[c.submit], &submit)) return bad(c.submit, "is not a time");
    char* end = nullptr;
    duration = std::strtod(f[c.duration].c_str(), &end);
    if (f[c.duration].empty() || *end != '\0' || !(duration >= 0)) {
      return bad(c.duration, "is not a duration in seconds");
    }
    long gpus = std::strtol(f[c.gpus].c_str(), &end, 10);
    if (f[c.gpus].empty() || *end != '\0' || gpus < 0 || gpus > 100'000) {
      return bad(c.gpus, "is not a GPU count");
    }
    if (gpus == 0 || duration < 1) continue;  // CPU jobs and instant failures hold no GPU
    TraceJob j;
    uint32_t per = std::max<uint32_t>(o.gpus_per_node, 1);
    long nodes = c.nodes >= 0 ? std::strtol(f[c.nodes].c_str(), nullptr, 10) : 0;
    if (nodes <= 0) nodes = (gpus + per - 1) / per;
    j.nodes = static_cast<uint32_t>(nodes);
    j.gpus_per_node = static_cast<uint32_t>((gpus + nodes - 1) / nodes);
    j.duration_ms = static_cast<Time>(duration * 1000);
    std::string tenant = c.tenant >= 0 ? f[c.tenant] : f[c.user];
    for (char& ch : tenant) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '-';
    }
    j.tenant = tenant.empty() || !std::isalnum(static_cast<unsigned char>(tenant[0]))
                   ? "t" + tenant
                   : tenant.substr(0, 63);
    j.priority_class = o.priority_class;
    j.checkpoint_interval_ms = o.checkpoint_interval_ms;
    j.line = n;
    submits.push_back(submit);
    out.push_back(std::move(j));
  }
  if (out.empty()) return absl::InvalidArgumentError(source + ": no GPU jobs");
  double first = *std::min_element(submits.begin(), submits.end());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].submit_ms = static_cast<Time>((submits[i] - first) * 1000);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit_ms < b.submit_ms; });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = i + 1;
  return out;
}

}  // namespace baton::sim
