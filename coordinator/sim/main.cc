// baton-sim: replays a workload trace through the coordinator's scheduler and policy on a
// simulated clock, and reports queue waits, utilisation, eviction losses, fair share,
// big-gang starvation and inference placement delay (docs/simulator.md).
//   baton-sim --cluster FILE --trace FILE [--policy FILE] [--json] [--timeline CSV]
//   baton-sim --cluster FILE --trace FILE --compare A.yaml B.yaml [--json]
//   baton-sim generate --jobs N --days D --seed S [...] [-o FILE]
//   baton-sim convert --from helios|philly LOG.csv [...] [-o FILE]
//   baton-sim convert --from openb PODS.csv --nodes NODES.csv --cluster-out FILE [...] [-o FILE]
// Exit codes: 0 ok, 1 error, 2 bad usage or input.
#include <chrono>
#include <cxxopts.hpp>
#include <fstream>
#include <iostream>

#include "common/resources.h"
#include "coordinator/policy_config.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/generate.h"
#include "coordinator/sim/openb.h"
#include "coordinator/sim/report.h"
#include "coordinator/sim/trace.h"

namespace baton::sim {
namespace {

constexpr int kOk = 0, kError = 1, kUsage = 2;

int Fail(int code, const std::string& what) {
  std::cerr << "baton-sim: " << what << "\n";
  return code;
}

// Writes to `path`, or stdout for "" or "-".
bool Output(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (path.empty() || path == "-") {
    write(std::cout);
    return true;
  }
  std::ofstream out(path);
  if (!out) return false;
  write(out);
  return static_cast<bool>(out);
}

absl::StatusOr<Time> Seconds(const std::string& text) {
  absl::StatusOr<uint64_t> s = ParseDurationSeconds(text);
  if (!s.ok()) return s.status();
  return static_cast<Time>(*s) * 1000;
}

int Generate(int argc, char** argv) {
  cxxopts::Options opts("baton-sim generate",
                        "A synthetic trace with the published shape of GPU-cluster workloads "
                        "(CSV on stdout or -o).");
  SyntheticOptions s;
  opts.add_options()("jobs", "batch jobs", cxxopts::value<uint64_t>()->default_value("1000"))(
      "days", "span of the submissions", cxxopts::value<double>()->default_value("1"))(
      "seed", "random seed", cxxopts::value<uint64_t>()->default_value("1"))(
      "tenants", "tenants team-a, team-b, ...", cxxopts::value<uint32_t>()->default_value("4"))(
      "cluster-gpus", "GPUs the batch load is scaled to",
      cxxopts::value<uint32_t>()->default_value("64"))(
      "load", "offered batch load (fraction of cluster-gpus)",
      cxxopts::value<double>()->default_value("0.8"))(
      "gpus-per-node", "GPUs per node", cxxopts::value<uint32_t>()->default_value("8"))(
      "max-gang-nodes", "largest gang, nodes", cxxopts::value<uint32_t>()->default_value("16"))(
      "services", "inference services", cxxopts::value<uint32_t>()->default_value("2"))(
      "base-replicas", "always-on replicas per service",
      cxxopts::value<uint32_t>()->default_value("2"))(
      "peak-replicas", "daytime replicas per service",
      cxxopts::value<uint32_t>()->default_value("4"))(
      "inference-pool", "pool of the inference replicas ('' for the default pool)",
      cxxopts::value<std::string>()->default_value("inference"))(
      "o,output", "file to write (default stdout)", cxxopts::value<std::string>())("h,help",
                                                                                   "this help");
  try {
    auto r = opts.parse(argc, argv);
    if (r.count("help")) return (std::cout << opts.help(), kOk);
    s.jobs = r["jobs"].as<uint64_t>();
    s.days = r["days"].as<double>();
    s.seed = r["seed"].as<uint64_t>();
    s.tenants = r["tenants"].as<uint32_t>();
    s.cluster_gpus = r["cluster-gpus"].as<uint32_t>();
    s.load = r["load"].as<double>();
    s.gpus_per_node = r["gpus-per-node"].as<uint32_t>();
    s.max_gang_nodes = r["max-gang-nodes"].as<uint32_t>();
    s.services = r["services"].as<uint32_t>();
    s.base_replicas = r["base-replicas"].as<uint32_t>();
    s.peak_replicas = r["peak-replicas"].as<uint32_t>();
    s.inference_pool = r["inference-pool"].as<std::string>();
    if (s.jobs > 10'000'000 || !(s.days > 0 && s.days <= 365) || !(s.load > 0 && s.load <= 10) ||
        s.tenants == 0 || s.tenants > 676 || s.gpus_per_node == 0 || s.gpus_per_node > 64) {
      return Fail(kUsage,
                  "generate: --jobs <= 10000000, 0 < --days <= 365, 0 < --load <= 10, "
                  "1 <= --tenants <= 676, 1 <= --gpus-per-node <= 64");
    }
    std::vector<TraceJob> jobs = GenerateTrace(s);
    std::string out = r.count("output") ? r["output"].as<std::string>() : "";
    if (!Output(out, [&](std::ostream& o) { WriteTraceCsv(jobs, o); })) {
      return Fail(kError, "cannot write " + out);
    }
    return kOk;
  } catch (const cxxopts::exceptions::exception& e) {
    return Fail(kUsage, std::string("generate: ") + e.what());
  }
}

std::optional<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// --from openb: the pod list as a trace, the node list as a cluster file (openb.h).
int ConvertOpenb(const cxxopts::ParseResult& r) {
  if (!r.count("nodes") || !r.count("cluster-out")) {
    return Fail(kUsage, "convert: --from openb needs --nodes and --cluster-out");
  }
  OpenbOptions o;
  o.shares = !r.count("no-shares");
  o.mps_gpus = r["mps-gpus"].as<uint32_t>();
  o.users = r["users"].as<uint32_t>();
  o.share_class = r["share-class"].as<std::string>();
  o.ls_class = r["ls-class"].as<std::string>();
  o.be_class = r["be-class"].as<std::string>();
  absl::StatusOr<uint64_t> memory = ParseBytes(r["gpu-memory"].as<std::string>());
  if (!memory.ok() || *memory == 0) return Fail(kUsage, "convert: --gpu-memory: not a size");
  o.gpu_memory_bytes = *memory;
  if (o.users == 0) return Fail(kUsage, "convert: --users: at least 1");
  const std::string pods_path = r["log"].as<std::string>(),
                    nodes_path = r["nodes"].as<std::string>();
  std::optional<std::string> pods = ReadText(pods_path), nodes = ReadText(nodes_path);
  if (!pods) return Fail(kUsage, "cannot read " + pods_path);
  if (!nodes) return Fail(kUsage, "cannot read " + nodes_path);
  absl::StatusOr<OpenbTrace> trace = ConvertOpenbPods(*pods, pods_path, o);
  if (!trace.ok()) return Fail(kUsage, std::string(trace.status().message()));
  absl::StatusOr<std::string> cluster = ConvertOpenbNodes(*nodes, nodes_path, o);
  if (!cluster.ok()) return Fail(kUsage, std::string(cluster.status().message()));
  const std::string cluster_out = r["cluster-out"].as<std::string>();
  if (!Output(cluster_out, [&](std::ostream& out) { out << *cluster; })) {
    return Fail(kError, "cannot write " + cluster_out);
  }
  if (trace->skipped > 0) {
    std::cerr << "baton-sim convert: left out " << trace->skipped
              << " pod(s) with no positive duration\n";
  }
  std::string out = r.count("output") ? r["output"].as<std::string>() : "";
  if (!Output(out, [&](std::ostream& o2) { WriteTraceCsv(trace->jobs, o2); })) {
    return Fail(kError, "cannot write " + out);
  }
  return kOk;
}

int Convert(int argc, char** argv) {
  cxxopts::Options opts("baton-sim convert",
                        "A public job log (Helios cluster_log.csv, a Philly-style CSV, or "
                        "Alibaba's openb pod list with its node list) as a baton-sim trace; "
                        "docs/simulator.md maps the columns.");
  opts.add_options()("from", "helios, philly or openb", cxxopts::value<std::string>())(
      "nodes", "openb: the node list (openb_node_list_*.csv)", cxxopts::value<std::string>())(
      "cluster-out", "openb: the cluster file to write", cxxopts::value<std::string>())(
      "mps-gpus", "openb: GPUs of each GPU node offered as MPS pools",
      cxxopts::value<uint32_t>()->default_value("0"))(
      "gpu-memory", "openb: each GPU's memory (openb has none; a share gets its part)",
      cxxopts::value<std::string>()->default_value("16Gi"))(
      "users", "openb: users the pods are spread over (an MPS pool holds one user's shares)",
      cxxopts::value<uint32_t>()->default_value("1"))(
      "no-shares", "openb: a fractional task asks for a whole GPU (the baseline)")(
      "share-class", "openb: class of the shares (one that may share)",
      cxxopts::value<std::string>()->default_value("inference"))(
      "ls-class", "openb: class of whole-GPU LS and HP pods",
      cxxopts::value<std::string>()->default_value("inference"))(
      "be-class", "openb: class of the other pods",
      cxxopts::value<std::string>()->default_value("experiment"))("log", "the job log",
                                                                  cxxopts::value<std::string>())(
      "class", "priority class of every job",
      cxxopts::value<std::string>()->default_value("training"))(
      "gpus-per-node", "nodes of this many GPUs hold the gangs",
      cxxopts::value<uint32_t>()->default_value("8"))(
      "checkpoint-interval", "checkpoint interval given to every job",
      cxxopts::value<std::string>()->default_value("30m"))("completed-only",
                                                           "leave out failed and killed jobs")(
      "o,output", "file to write (default stdout)", cxxopts::value<std::string>())("h,help",
                                                                                   "this help");
  opts.parse_positional({"log"});
  try {
    auto r = opts.parse(argc, argv);
    if (r.count("help")) return (std::cout << opts.help(), kOk);
    if (!r.count("from") || !r.count("log")) return Fail(kUsage, "convert: --from and a log");
    std::string from = r["from"].as<std::string>();
    if (from == "openb") return ConvertOpenb(r);
    ConvertOptions c;
    if (from != "helios" && from != "philly") {
      return Fail(kUsage, "convert: --from helios|philly|openb");
    }
    c.format = from == "helios" ? LogFormat::kHelios : LogFormat::kPhilly;
    c.priority_class = r["class"].as<std::string>();
    c.gpus_per_node = r["gpus-per-node"].as<uint32_t>();
    c.keep_failed = !r.count("completed-only");
    absl::StatusOr<Time> interval = Seconds(r["checkpoint-interval"].as<std::string>());
    if (!interval.ok()) return Fail(kUsage, "convert: --checkpoint-interval: not a duration");
    c.checkpoint_interval_ms = *interval;
    std::string path = r["log"].as<std::string>();
    std::ifstream in(path);
    if (!in) return Fail(kUsage, "cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    absl::StatusOr<std::vector<TraceJob>> jobs = ConvertJobLog(text.str(), path, c);
    if (!jobs.ok()) return Fail(kUsage, std::string(jobs.status().message()));
    std::string out = r.count("output") ? r["output"].as<std::string>() : "";
    if (!Output(out, [&](std::ostream& o) { WriteTraceCsv(*jobs, o); })) {
      return Fail(kError, "cannot write " + out);
    }
    return kOk;
  } catch (const cxxopts::exceptions::exception& e) {
    return Fail(kUsage, std::string("convert: ") + e.what());
  }
}

struct Run {
  std::string name;
  nlohmann::json summary;
};

// One policy on the trace: its summary (timing included), and the timeline if asked.
absl::StatusOr<Run> Simulate(const std::vector<sched::NodeInfo>& nodes,
                             const std::vector<TraceJob>& jobs, const std::string& trace_path,
                             const std::string& policy_path, const SimOptions& options,
                             const ReportOptions& report, Time drain_ms,
                             const std::string& timeline) {
  absl::StatusOr<Policy> policy =
      policy_path.empty() ? Policy::Default() : LoadPolicyFile(policy_path);
  if (!policy.ok()) return policy.status();
  if (absl::Status s = CheckTrace(jobs, trace_path, nodes, *policy); !s.ok()) return s;
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Simulator> sim = SimulateTrace(nodes, *policy, jobs, options, drain_ms);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Run run{policy_path.empty() ? "default policy" : policy_path, Summarize(*sim, report)};
  run.summary["sim"]["wall_s"] = wall;
  run.summary["sim"]["speedup"] =
      wall > 0 ? run.summary["sim"]["simulated_s"].get<double>() / wall : 0;
  if (!timeline.empty() && !Output(timeline, [&](std::ostream& o) { WriteTimeline(*sim, o); })) {
    return absl::InternalError("cannot write " + timeline);
  }
  return run;
}

int Main(int argc, char** argv) {
  // --compare takes two files; cxxopts takes one value per flag, so it is read here.
  std::vector<std::string> compare;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--compare") {
      if (i + 2 >= argc) return Fail(kUsage, "--compare needs two policy files");
      compare = {argv[i + 1], argv[i + 2]};
      i += 2;
      continue;
    }
    rest.push_back(argv[i]);
  }
  cxxopts::Options opts("baton-sim",
                        "Replays a trace through baton's scheduler on a simulated clock.\n"
                        "  baton-sim generate --help | baton-sim convert --help\n"
                        "  --compare A.yaml B.yaml: two policies on the same trace");
  opts.add_options()("cluster", "cluster file (YAML)", cxxopts::value<std::string>())(
      "trace", "trace (CSV or JSONL)", cxxopts::value<std::string>())(
      "policy", "policy file (the coordinator's YAML; default: the built-in policy)",
      cxxopts::value<std::string>())("json", "the summary as JSON")(
      "timeline", "write a CSV timeline here", cxxopts::value<std::string>())(
      "sample-interval", "timeline sample interval",
      cxxopts::value<std::string>()->default_value("5m"))(
      "big-gang-gpus", "gangs of at least this many GPUs count as big",
      cxxopts::value<uint32_t>()->default_value("64"))(
      "drain", "simulated time allowed after the last submit",
      cxxopts::value<std::string>()->default_value("30d"))(
      "save-on-eviction",
      "evicted jobs save on the way out (else they lose what their last "
      "checkpoint did not keep)")("h,help", "this help");
  try {
    int n = static_cast<int>(rest.size());
    auto r = opts.parse(n, rest.data());
    if (r.count("help")) return (std::cout << opts.help(), kOk);
    if (!r.count("cluster") || !r.count("trace")) return Fail(kUsage, "--cluster and --trace");
    auto cluster = LoadCluster(r["cluster"].as<std::string>());
    if (!cluster.ok()) return Fail(kUsage, std::string(cluster.status().message()));
    const std::vector<sched::NodeInfo>* nodes = &cluster->nodes;
    std::string trace_path = r["trace"].as<std::string>();
    auto jobs = LoadTrace(trace_path);
    if (!jobs.ok()) return Fail(kUsage, std::string(jobs.status().message()));
    SimOptions options;
    auto sample = Seconds(r["sample-interval"].as<std::string>());
    auto drain = Seconds(r["drain"].as<std::string>());
    if (!sample.ok() || !drain.ok() || *sample <= 0) {
      return Fail(kUsage, "--sample-interval and --drain take durations (5m, 30d)");
    }
    options.sample_interval_ms = *sample;
    options.save_on_eviction = r.count("save-on-eviction") > 0;
    options.nodes_per_leaf = cluster->tree.nodes_per_leaf;
    options.topology_slowdown = cluster->tree.slowdown;
    ReportOptions report{r["big-gang-gpus"].as<uint32_t>()};
    std::string timeline = r.count("timeline") ? r["timeline"].as<std::string>() : "";
    std::vector<std::string> policies = compare;
    if (policies.empty()) policies = {r.count("policy") ? r["policy"].as<std::string>() : ""};
    std::vector<Run> runs;
    for (size_t i = 0; i < policies.size(); ++i) {
      std::string tl = timeline.empty() || policies.size() == 1
                           ? timeline
                           : timeline + "." + std::to_string(i + 1);
      auto run = Simulate(*nodes, *jobs, trace_path, policies[i], options, report, *drain, tl);
      if (!run.ok()) return Fail(kUsage, std::string(run.status().message()));
      runs.push_back(std::move(*run));
    }
    if (r.count("json")) {
      nlohmann::json out = runs.size() == 1 ? runs[0].summary : nlohmann::json::object();
      if (runs.size() == 2)
        out = {{"a", runs[0].summary},
               {"b", runs[1].summary},
               {"a_policy", runs[0].name},
               {"b_policy", runs[1].name}};
      std::cout << out.dump(2) << "\n";
    } else if (runs.size() == 2) {
      std::cout << CompareText(runs[0].summary, runs[0].name, runs[1].summary, runs[1].name);
    } else {
      std::cout << SummaryText(runs[0].summary);
    }
    return kOk;
  } catch (const cxxopts::exceptions::exception& e) {
    return Fail(kUsage, e.what());
  }
}

}  // namespace
}  // namespace baton::sim

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "generate") {
    return baton::sim::Generate(argc - 1, argv + 1);
  }
  if (argc > 1 && std::string(argv[1]) == "convert") return baton::sim::Convert(argc - 1, argv + 1);
  return baton::sim::Main(argc, argv);
}
