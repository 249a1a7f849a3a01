#include "coordinator/sim/openb.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/resources.h"

namespace baton::sim {
namespace {

// A CSV with a header: each row's fields by column name; problems name file, line, column.
class Table {
 public:
  Table(const std::string& csv, std::string source, const std::vector<std::string>& need)
      : source_(std::move(source)) {
    std::istringstream in(csv);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      std::vector<std::string> fields = absl::StrSplit(line, ',');
      for (auto& f : fields) f = std::string(absl::StripAsciiWhitespace(f));
      if (header_.empty()) {
        header_ = fields;
        for (const std::string& c : need) {
          if (std::find(header_.begin(), header_.end(), c) == header_.end()) {
            Problem(n, "", "the header lacks the column '" + c + "'");
          }
        }
        if (!problems_.empty()) return;
        continue;
      }
      if (fields.size() != header_.size()) {
        Problem(n, "",
                std::to_string(fields.size()) + " fields, the header has " +
                    std::to_string(header_.size()));
        continue;
      }
      rows_.push_back({n, std::move(fields)});
    }
    if (header_.empty()) Problem(n, "", "no header row");
  }
  struct Row {
    int line;
    std::vector<std::string> fields;
  };
  const std::vector<Row>& rows() const { return rows_; }
  const std::string& Get(const Row& r, const std::string& column) const {
    static const std::string kEmpty;
    auto it = std::find(header_.begin(), header_.end(), column);
    return it == header_.end() ? kEmpty : r.fields[it - header_.begin()];
  }
  // A whole number (openb writes some as "12.0"), or a problem naming the column.
  int64_t Number(const Row& r, const std::string& column) {
    const std::string& v = Get(r, column);
    double d = 0;
    if (!absl::SimpleAtod(v, &d) || d < 0 || d > 9e15) {
      Problem(r.line, column, "'" + v + "' is not a number of at least 0");
      return 0;
    }
    return static_cast<int64_t>(d);
  }
  void Problem(int line, const std::string& column, const std::string& what) {
    if (problems_.size() < 20) {
      problems_.push_back(source_ + ":" + std::to_string(line) + ": " +
                          (column.empty() ? "" : column + ": ") + what);
    }
  }
  absl::Status Status() const {
    if (problems_.empty()) return absl::OkStatus();
    std::string text;
    for (const auto& p : problems_) text += (text.empty() ? "" : "\n") + p;
    return absl::InvalidArgumentError(text);
  }

 private:
  std::string source_;
  std::vector<std::string> header_;
  std::vector<Row> rows_;
  std::vector<std::string> problems_;
};

uint64_t Hash(const std::string& s) {  // FNV-1a: the same user for a name on every machine
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

absl::StatusOr<OpenbTrace> ConvertOpenbPods(const std::string& csv, const std::string& source,
                                            const OpenbOptions& o) {
  Table t(csv, source,
          {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
           "creation_time", "deletion_time", "scheduled_time"});
  if (absl::Status s = t.Status(); !s.ok()) return s;
  struct Pod {
    const Table::Row* row;
    int64_t created, ends, scheduled;
  };
  std::vector<Pod> pods;
  int64_t first = INT64_MAX;
  for (const Table::Row& r : t.rows()) {
    Pod p{&r, t.Number(r, "creation_time"), t.Number(r, "deletion_time"),
          t.Number(r, "scheduled_time")};
    first = std::min(first, p.created);
    pods.push_back(p);
  }
  OpenbTrace out;
  for (const Pod& p : pods) {
    const Table::Row& r = *p.row;
    const int64_t start = std::max(p.created, p.scheduled);
    if (p.ends <= start) {
      ++out.skipped;
      continue;
    }
    TraceJob j;
    j.id = out.jobs.size() + 1;
    j.line = r.line;
    j.submit_ms = (p.created - first) * 1000;
    j.duration_ms = (p.ends - start) * 1000;
    j.tenant = "openb";
    j.user = "u" + std::to_string(Hash(t.Get(r, "name")) % std::max<uint32_t>(o.users, 1));
    j.nodes = 1;
    const int64_t gpus = t.Number(r, "num_gpu"), milli = t.Number(r, "gpu_milli");
    if (gpus > 64) t.Problem(r.line, "num_gpu", "more than 64 GPUs in one pod");
    if (milli > 1000) t.Problem(r.line, "gpu_milli", "more than 1000 (one GPU)");
    j.gpus_per_node = static_cast<uint32_t>(std::min<int64_t>(gpus, 64));
    j.cpu_millis_per_node = static_cast<uint64_t>(t.Number(r, "cpu_milli"));
    j.memory_bytes_per_node = static_cast<uint64_t>(t.Number(r, "memory_mib")) << 20;
    const std::string& qos = t.Get(r, "qos");
    j.priority_class = qos == "LS" || qos == "HP" ? o.ls_class : o.be_class;
    const bool fraction = gpus == 1 && milli > 0 && milli < 1000;
    if (fraction && o.shares) {
      j.gpu_share_percent = static_cast<uint32_t>((milli + 9) / 10);
      j.gpu_memory_bytes = o.gpu_memory_bytes / 100 * j.gpu_share_percent;
      j.priority_class = o.share_class;
    }
    const std::string& spec = t.Get(r, "gpu_spec");
    if (j.gpus_per_node > 0 && !spec.empty() && spec.find('|') == std::string::npos) {
      j.gpu_model = spec;
    }
    out.jobs.push_back(std::move(j));
  }
  if (absl::Status s = t.Status(); !s.ok()) return s;
  if (out.jobs.empty()) return absl::InvalidArgumentError(source + ": no pod with a duration");
  return out;
}

absl::StatusOr<std::string> ConvertOpenbNodes(const std::string& csv, const std::string& source,
                                              const OpenbOptions& o) {
  Table t(csv, source, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (absl::Status s = t.Status(); !s.ok()) return s;
  // (cpus, memory MiB, GPUs, model) -> nodes, in first-seen order.
  std::vector<std::pair<std::tuple<int64_t, int64_t, int64_t, std::string>, uint32_t>> groups;
  for (const Table::Row& r : t.rows()) {
    auto key = std::make_tuple((t.Number(r, "cpu_milli") + 999) / 1000, t.Number(r, "memory_mib"),
                               t.Number(r, "gpu"), t.Get(r, "model"));
    if (std::get<2>(key) > 64) t.Problem(r.line, "gpu", "more than 64 GPUs on one node");
    if (std::get<0>(key) == 0) t.Problem(r.line, "cpu_milli", "a node without CPUs");
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, 1});
    } else {
      ++it->second;
    }
  }
  if (absl::Status s = t.Status(); !s.ok()) return s;
  std::ostringstream y;
  y << "# From " << source << " (baton-sim convert --from openb)\nnode_groups:\n";
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& [cpus, mib, gpus, model] = groups[i].first;
    y << "  - name: openb" << i << "\n    count: " << groups[i].second << "\n    gpus: " << gpus
      << "\n    numa: 1\n    cpus: " << cpus << "\n    memory: " << mib << "Mi\n";
    if (gpus > 0) {
      y << "    gpu_model: \"" << (model.empty() ? "GPU" : model)
        << "\"\n    gpu_memory: " << FormatBytes(o.gpu_memory_bytes) << "\n";
      if (o.shares && o.mps_gpus > 0) {
        y << "    mps_gpus: " << std::min<int64_t>(o.mps_gpus, gpus) << "\n";
      }
    }
  }
  return y.str();
}

}  // namespace baton::sim
