// baton-agent: the node agent. Registers this node's inventory with the coordinator,
// runs the attempts it is given, serves their logs on --listen and Prometheus metrics
// (/metrics, /healthz) on --metrics-listen.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/config_file.h"
#include "common/daemon.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/metrics_server.h"
#include "common/net.h"
#include "common/resources.h"
#include "common/version.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/agent_metrics.h"
#include "launcher/agent/epoch_fence.h"
#include "launcher/agent/exec_client.h"
#include "launcher/agent/inventory.h"
#include "launcher/agent/isolation/ifb_redirect.h"
#include "launcher/agent/isolation/setup.h"
#include "launcher/agent/node_service.h"
#include "launcher/agent/process.h"
#include "launcher/agent/rank_bind.h"
#include "proto/rpc_util.h"

namespace {

struct Flags {
  baton::AgentOptions agent;
  std::string advertise;
  baton::InventoryOptions inventory;
  std::string fake_gpu_utilization;  // the fake GPUs' utilisation file
  baton::IsolationOptions isolation;
  std::string listen;
  std::string ready_file;
  std::string metrics_listen;
  std::string metrics_ready_file;
  std::string log_level;
  baton::TlsOptions tls;
  std::string system_cpus;
};

// The node's CPUs and --system-cpus (a cpuset list, checked against them).
absl::StatusOr<std::shared_ptr<baton::SelfAffinity>> SelfAffinityFor(
    const std::string& system_cpus, const baton::v1::Inventory& inventory) {
  std::vector<uint32_t> node;
  for (const auto& n : inventory.numa_nodes())
    node.insert(node.end(), n.cpus().begin(), n.cpus().end());
  if (node.empty()) {
    for (uint32_t c = 0; c < inventory.cpus(); ++c) node.push_back(c);
  }
  std::vector<uint32_t> system;
  if (!system_cpus.empty()) {
    auto parsed = baton::ParseCpuList(system_cpus);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError("--system-cpus '" + system_cpus +
                                        "': " + std::string(parsed.status().message()));
    }
    system = *parsed;
    if (absl::Status s = baton::SelfAffinity::Check(node, system); !s.ok()) return s;
  }
  return std::make_shared<baton::SelfAffinity>(node, system);
}

// "key=value:Effect" -> Taint.
baton::v1::Taint ParseTaint(const std::string& text) {
  size_t eq = text.find('='), colon = text.rfind(':');
  if (eq == std::string::npos || colon == std::string::npos || colon < eq || eq == 0) {
    throw cxxopts::exceptions::exception("--taint '" + text + "': expected key=value:Effect");
  }
  baton::v1::Taint t;
  t.set_key(text.substr(0, eq));
  t.set_value(text.substr(eq + 1, colon - eq - 1));
  t.set_effect(text.substr(colon + 1));
  return t;
}

std::string Hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

constexpr char kDefaultConfig[] = "/etc/baton/agent.yaml";

// The flags, with the config file's settings (common/config_file.h) under them. Throws
// cxxopts' exception on a bad flag or config file.
Flags ParseFlags(int argc, char** argv) {
  cxxopts::Options opts("baton-agent", "baton's node agent");
  // clang-format off
  opts.add_options()
      ("name", "node name (default: the hostname)", cxxopts::value<std::string>())
      ("coordinator", "coordinator host:port, or every HA replica's ip:port,ip:port,... (the "
                      "agent talks to the one that leads)",
       cxxopts::value<std::string>()->default_value("127.0.0.1:7070"))
      ("listen", "host:port for this agent's own service (port 0 picks one)",
       cxxopts::value<std::string>()->default_value("127.0.0.1:0"))
      ("advertise", "host:port others use to reach --listen (default: the bound address)",
       cxxopts::value<std::string>()->default_value(""))
      ("data-dir", "job directories and logs",
       cxxopts::value<std::string>()->default_value("/var/lib/baton/agent"))
      ("fake-gpus", "GPUs to invent on a node without NVIDIA",
       cxxopts::value<uint32_t>()->default_value("0"))
      ("fake-gpu-model", "model name of the fake GPUs",
       cxxopts::value<std::string>()->default_value("FakeGPU"))
      ("fake-gpu-utilization",
       "a file of \"UUID PERCENT\" (or \"* PERCENT\") lines the fake GPUs report as their "
       "utilisation, read every --stats-interval",
       cxxopts::value<std::string>()->default_value(""))
      ("fake-gpu-memory", "memory of each fake GPU",
       cxxopts::value<std::string>()->default_value("80Gi"))
      ("fake-mig", "each fake GPU in MIG mode, as SLICES slices of PROFILE (PROFILE:SLICES, "
       "e.g. 3g.40gb:2)", cxxopts::value<std::string>()->default_value(""))
      ("mps-gpus", "GPUs offered as MPS pools for inference shares: \"all\" (every GPU not "
       "in MIG mode) or indices/UUIDs (\"0,2\"); the rest stay whole",
       cxxopts::value<std::string>()->default_value(""))
      ("mps-control", "the CUDA MPS control program run for each pool",
       cxxopts::value<std::string>()->default_value("nvidia-cuda-mps-control"))
      ("pool", "node pool", cxxopts::value<std::string>()->default_value(""))
      ("label", "node label key=value (repeatable)", cxxopts::value<std::vector<std::string>>())
      ("taint", "node taint key=value:Effect (repeatable)",
       cxxopts::value<std::vector<std::string>>())
      ("nic", "cluster network interface (NCCL_SOCKET_IFNAME)",
       cxxopts::value<std::string>()->default_value(""))
      ("nic-rate", "its rate (e.g. 10gbit)", cxxopts::value<std::string>()->default_value("0"))
      ("mpi-network", "CIDR Open MPI's TCP uses (default: the /24 of the gang's first node)",
       cxxopts::value<std::string>()->default_value(""))
      ("mpirun", "mpirun binary for mpi-mode jobs",
       cxxopts::value<std::string>()->default_value("mpirun"))
      ("keep-jobs-on-exit", "leave jobs running when the agent stops (re-adopted at restart)")
      ("retention", "attempt directories (records, log, work dir) of ended attempts are removed "
       "this long after their last change; 0: kept (match the coordinator's --retention)",
       cxxopts::value<std::string>()->default_value("30d"))
      ("max-log-bytes", "most output kept per attempt (e.g. 1Gi); past it a line says it was "
       "truncated", cxxopts::value<std::string>()->default_value("1Gi"))
      ("isolation", "cgroup isolation: auto, v1, v2 or none (none: no cgroups, no network caps)",
       cxxopts::value<std::string>()->default_value("auto"))
      ("cgroup-root", "where the cgroup filesystems are mounted",
       cxxopts::value<std::string>()->default_value("/sys/fs/cgroup"))
      ("cgroup-parent", "parent cgroup of the attempts, in each hierarchy (default baton/NAME)",
       cxxopts::value<std::string>()->default_value(""))
      ("inference-classes", "priority classes isolated as inference when a launch does not say",
       cxxopts::value<std::string>()->default_value("inference-critical,inference"))
      ("inference-memory-headroom", "inference memory limit above its request, percent",
       cxxopts::value<uint32_t>()->default_value("20"))
      ("cpu-weight-per-core", "cgroup CPU weight per requested core",
       cxxopts::value<uint32_t>()->default_value("100"))
      ("min-shared-cpus", "CPUs inference jobs may never hold exclusively",
       cxxopts::value<uint32_t>()->default_value("1"))
      ("training-burst", "training may use every CPU no inference job holds (else its request)",
       cxxopts::value<bool>()->default_value("true"))
      ("system-cpus", "CPUs for the node's own baton work (agent, tc, nft, log pumps), as "
       "0-3,8; never those inference holds (default: every CPU inference does not hold)",
       cxxopts::value<std::string>()->default_value(""))
      ("net-default-ceil", "a job's network ceiling without a network cap, percent of --nic-rate",
       cxxopts::value<uint32_t>()->default_value("70"))
      ("net-guaranteed", "guaranteed rate of traffic outside capped jobs, percent of --nic-rate",
       cxxopts::value<uint32_t>()->default_value("30"))
      ("net-cap-mark", "bits of the packet mark that send capped jobs' traffic to the caps' "
       "IFB device (hex or decimal; bits no CNI or kube-proxy on the node uses)",
       cxxopts::value<std::string>()->default_value("0x00800000"))
      ("stats-interval", "how often limits and throttling are reported",
       cxxopts::value<std::string>()->default_value("5s"))
      ("nvml", "NVML library to load for GPU discovery (\"\" skips it)",
       cxxopts::value<std::string>()->default_value("libnvidia-ml.so.1"))
      ("ready-file", "write the bound address here once serving",
       cxxopts::value<std::string>()->default_value(""))
      ("metrics-listen", "host:port for Prometheus /metrics and /healthz (loopback or private; "
       "port 0 picks one; empty: off)", cxxopts::value<std::string>()->default_value(""))
      ("metrics-ready-file", "write the bound metrics address here once serving",
       cxxopts::value<std::string>()->default_value(""))
      ("tls-ca", "the cluster CA bundle (PEM): the coordinator's certificate must chain to it",
       cxxopts::value<std::string>()->default_value("/etc/baton/tls/ca.crt"))
      ("tls-cert", "this node's certificate (PEM, O=baton-node, CN=--name)",
       cxxopts::value<std::string>()->default_value("/etc/baton/tls/node.crt"))
      ("tls-key", "its private key (PEM)",
       cxxopts::value<std::string>()->default_value("/etc/baton/tls/node.key"))
      ("insecure", "plaintext, no certificates: development only, refused unless --listen and "
       "--coordinator are loopback")
      ("log-level", "trace, debug, info, warn, error",
       cxxopts::value<std::string>()->default_value("info"))
      ("h,help", "show this help")
      ("version", "print the version and exit");
  // clang-format on
  baton::AddConfigFileFlags(opts, kDefaultConfig);
  auto parsed = baton::ParseWithConfigFile(opts, argc, argv, kDefaultConfig);
  if (!parsed.ok()) throw cxxopts::exceptions::exception(std::string(parsed.status().message()));
  const cxxopts::ParseResult& r = *parsed;
  if (r.count("help")) {
    std::cout << opts.help() << "\n";
    std::exit(0);
  }
  if (r.count("version")) {
    std::cout << "baton-agent " << baton::Version() << "\n";
    std::exit(0);
  }
  if (!r.unmatched().empty()) {
    throw cxxopts::exceptions::exception("unexpected argument '" + r.unmatched()[0] + "'");
  }
  Flags f;
  f.agent.node_name = r.count("name") ? r["name"].as<std::string>() : Hostname();
  f.agent.coordinator = r["coordinator"].as<std::string>();
  f.agent.data_dir = r["data-dir"].as<std::string>();
  f.agent.pool = r["pool"].as<std::string>();
  f.advertise = r["advertise"].as<std::string>();
  f.agent.kill_jobs_on_stop = !r.count("keep-jobs-on-exit");
  if (r.count("label")) {
    for (const auto& kv : r["label"].as<std::vector<std::string>>()) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw cxxopts::exceptions::exception("--label '" + kv + "': expected key=value");
      }
      f.agent.labels[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  if (r.count("taint")) {
    for (const auto& t : r["taint"].as<std::vector<std::string>>()) {
      f.agent.taints.push_back(ParseTaint(t));
    }
  }
  f.inventory.node_name = f.agent.node_name;
  f.inventory.fake_gpus = r["fake-gpus"].as<uint32_t>();
  f.inventory.fake_gpu_model = r["fake-gpu-model"].as<std::string>();
  f.fake_gpu_utilization = r["fake-gpu-utilization"].as<std::string>();
  auto mem = baton::ParseBytes(r["fake-gpu-memory"].as<std::string>());
  auto rate = baton::ParseMbps(r["nic-rate"].as<std::string>());
  if (!mem.ok())
    throw cxxopts::exceptions::exception("--fake-gpu-memory: " +
                                         std::string(mem.status().message()));
  if (!rate.ok())
    throw cxxopts::exceptions::exception("--nic-rate: " + std::string(rate.status().message()));
  f.inventory.fake_gpu_memory_bytes = *mem;
  f.inventory.mps_gpus = r["mps-gpus"].as<std::string>();
  f.agent.mps_control = r["mps-control"].as<std::string>();
  if (const std::string mig = r["fake-mig"].as<std::string>(); !mig.empty()) {
    if (absl::Status s = baton::ParseFakeMig(mig, &f.inventory); !s.ok()) {
      throw cxxopts::exceptions::exception(std::string(s.message()));
    }
  }
  auto max_log = baton::ParseBytes(r["max-log-bytes"].as<std::string>());
  if (!max_log.ok() || *max_log < 4096) {
    throw cxxopts::exceptions::exception(
        "--max-log-bytes: " +
        (max_log.ok() ? std::string("at least 4Ki") : std::string(max_log.status().message())));
  }
  f.agent.max_log_bytes = *max_log;
  auto retention = baton::ParseDurationSeconds(r["retention"].as<std::string>());  // "0" too
  if (!retention.ok()) {
    throw cxxopts::exceptions::exception("--retention: " +
                                         std::string(retention.status().message()));
  }
  f.agent.retention = absl::Seconds(static_cast<int64_t>(*retention));
  f.inventory.nic = r["nic"].as<std::string>();
  f.agent.nic = f.inventory.nic;
  f.agent.mpi_network = r["mpi-network"].as<std::string>();
  f.agent.mpirun = r["mpirun"].as<std::string>();
  f.inventory.nic_mbps = *rate;
  f.inventory.nvml_library = r["nvml"].as<std::string>();
  f.isolation.mode = r["isolation"].as<std::string>();
  f.isolation.cgroup_root = r["cgroup-root"].as<std::string>();
  f.isolation.cgroup_parent = r["cgroup-parent"].as<std::string>();
  f.isolation.classes.inference_memory_headroom_percent =
      r["inference-memory-headroom"].as<uint32_t>();
  f.isolation.classes.weight_per_core = r["cpu-weight-per-core"].as<uint32_t>();
  f.isolation.classes.min_shared_cpus = r["min-shared-cpus"].as<uint32_t>();
  f.isolation.classes.training_may_burst = r["training-burst"].as<bool>();
  f.system_cpus = r["system-cpus"].as<std::string>();
  // Network caps need the NIC's rate; a NIC named without one only steers NCCL.
  f.isolation.net.nic = f.inventory.nic_mbps ? f.inventory.nic : "";
  f.isolation.net.nic_mbps = f.inventory.nic_mbps;
  f.isolation.net.default_ceil_percent = r["net-default-ceil"].as<uint32_t>();
  f.isolation.net.guaranteed_percent = r["net-guaranteed"].as<uint32_t>();
  f.isolation.net.table = "baton_" + f.agent.node_name;
  if (f.isolation.net.default_ceil_percent == 0 || f.isolation.net.default_ceil_percent > 100 ||
      f.isolation.net.guaranteed_percent == 0 || f.isolation.net.guaranteed_percent > 100) {
    throw cxxopts::exceptions::exception("--net-default-ceil and --net-guaranteed: 1..100");
  }
  auto mark = baton::ParseCapMark(r["net-cap-mark"].as<std::string>());
  if (!mark.ok()) {
    throw cxxopts::exceptions::exception("--net-cap-mark: " + std::string(mark.status().message()));
  }
  f.isolation.net.mark = *mark;
  auto stats = baton::ParseDuration(r["stats-interval"].as<std::string>());
  if (!stats.ok()) {
    throw cxxopts::exceptions::exception("--stats-interval: " +
                                         std::string(stats.status().message()));
  }
  f.agent.stats_interval = std::max(absl::Milliseconds(100), *stats);
  f.agent.inference_classes.clear();
  {
    std::stringstream classes(r["inference-classes"].as<std::string>());
    std::string c;
    while (std::getline(classes, c, ',')) {
      if (!c.empty()) f.agent.inference_classes.push_back(c);
    }
  }
  f.listen = r["listen"].as<std::string>();
  f.ready_file = r["ready-file"].as<std::string>();
  f.metrics_listen = r["metrics-listen"].as<std::string>();
  f.metrics_ready_file = r["metrics-ready-file"].as<std::string>();
  f.log_level = r["log-level"].as<std::string>();
  f.tls.ca_file = r["tls-ca"].as<std::string>();
  f.tls.cert_file = r["tls-cert"].as<std::string>();
  f.tls.key_file = r["tls-key"].as<std::string>();
  f.tls.insecure = r.count("insecure") > 0;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "exec") {
    if (argc >= 3 && std::string(argv[2]) == baton::kBindRankFlag) {
      return baton::RunBoundRank(std::vector<std::string>(argv + 3, argv + argc));
    }
    return baton::RunExecClient(std::vector<std::string>(argv + 2, argv + argc));
  }
  baton::BlockStopSignals();
  baton::DisableMutexDeadlockDetection();
  Flags flags;
  try {
    flags = ParseFlags(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "baton-agent: " << e.what() << "\n";
    return 2;
  }
  baton::InitLogging("agent", flags.log_level);
  for (auto [flag, addr] :
       {std::pair{"--listen", flags.listen}, std::pair{"--coordinator", flags.agent.coordinator}}) {
    if (auto hp = baton::SplitHostPort(addr); !hp.ok()) {
      spdlog::error("{}: {}", flag, std::string(hp.status().message()));
      return 2;
    }
  }
  if (!flags.metrics_listen.empty()) {
    if (auto s = baton::CheckListenAddress("--metrics-listen", flags.metrics_listen); !s.ok()) {
      spdlog::error("{}", std::string(s.message()));
      return 2;
    }
  }
  auto tls = baton::LoadTls(flags.tls, /*need_cert=*/true);
  if (!tls.ok()) {
    spdlog::error("{}", std::string(tls.status().message()));
    return 2;
  }
  auto server_creds = baton::ServerCredentials(*tls, flags.listen);
  auto target = baton::ParseCoordinatorTarget(flags.agent.coordinator);
  if (!target.ok()) {
    spdlog::error("--coordinator: {}", std::string(target.status().message()));
    return 2;
  }
  auto coordinator_creds = baton::ChannelCredentials(*tls, target->first);
  for (const auto* s : {&server_creds.status(), &coordinator_creds.status()}) {
    if (!s->ok()) {
      spdlog::error("{}", std::string(s->message()));
      return 2;
    }
  }
  if (tls->insecure) {
    spdlog::warn(
        "*** --insecure: PLAINTEXT to the coordinator and on {}; nobody is "
        "authenticated. Development only. ***",
        flags.listen);
  }
  flags.agent.tls = *tls;
  flags.agent.tls_ca_file = std::filesystem::absolute(flags.tls.ca_file).string();
  if (!baton::IsValidName(flags.agent.node_name)) {
    spdlog::error("--name '{}' must match [A-Za-z0-9][A-Za-z0-9._-]{{0,62}}",
                  flags.agent.node_name);
    return 2;
  }
  // Every job process starts under baton-keeper, installed beside this binary.
  if (access(baton::KeeperProgram().c_str(), X_OK) != 0) {
    spdlog::error("cannot run {}: {} (it is installed beside baton-agent)", baton::KeeperProgram(),
                  std::strerror(errno));
    return 1;
  }
  auto inventory = baton::ReadInventory(flags.inventory);
  if (!inventory.ok()) {
    spdlog::error("inventory: {}", inventory.status().ToString());
    return 1;
  }
  std::error_code ec;
  // Jobs run in other directories: every path handed to them must be absolute.
  flags.agent.data_dir = std::filesystem::absolute(flags.agent.data_dir, ec).lexically_normal();
  std::filesystem::create_directories(flags.agent.data_dir + "/jobs", ec);
  if (ec) {
    spdlog::error("--data-dir {}: {}", flags.agent.data_dir, ec.message());
    return 1;
  }
  if (auto epoch = baton::EpochFence::Recorded(flags.agent.data_dir); !epoch.ok()) {
    spdlog::error("{}", std::string(epoch.status().message()));
    return 2;
  }

  auto isolator = baton::CreateIsolator(flags.isolation, flags.agent.node_name, *inventory);
  if (!isolator.ok()) {
    spdlog::error("isolation: {}", isolator.status().ToString());
    return 1;
  }
  auto self_affinity = SelfAffinityFor(flags.system_cpus, *inventory);
  if (!self_affinity.ok()) {
    spdlog::error("{}", std::string(self_affinity.status().message()));
    return 2;
  }
  if (absl::Status s = (*isolator)->ManageSelfAffinity(*self_affinity); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 1;
  }
  spdlog::info("the agent's own work runs on CPUs {}",
               baton::FormatCpuList((*self_affinity)->current()));
  baton::Agent* agent_ptr = nullptr;  // set below; the metrics ask it whether it is connected
  auto metrics = std::make_shared<baton::AgentMetrics>(
      flags.agent.node_name, *inventory,
      [&agent_ptr] { return agent_ptr && agent_ptr->connected(); });
  flags.agent.gpu_usage =
      baton::GpuUsageFor(*inventory, flags.inventory.nvml_library, flags.fake_gpu_utilization);
  baton::Agent agent(flags.agent, *inventory, baton::RealClock::Get(), std::move(*isolator),
                     metrics.get());
  agent_ptr = &agent;
  baton::NodeService node_service(&agent, tls->insecure);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, *server_creds, &port);
  builder.RegisterService(&node_service);
  baton::SetServerMessageLimits(&builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::error("cannot listen on {}", flags.listen);
    return 1;
  }
  std::string bound = flags.listen.substr(0, flags.listen.rfind(':')) + ":" + std::to_string(port);
  std::string advertise = flags.advertise.empty() ? bound : flags.advertise;
  agent.Start(advertise);
  spdlog::info("agent {} serving on {} ({} CPUs, {} memory, {} GPUs), coordinator {}",
               flags.agent.node_name, bound, inventory->cpus(),
               baton::FormatBytes(inventory->memory_bytes()), inventory->gpus_size(),
               flags.agent.coordinator);
  std::unique_ptr<baton::MetricsServer> metrics_server;
  if (!flags.metrics_listen.empty()) {
    auto started = baton::MetricsServer::Start({flags.metrics_listen, {metrics}, nullptr});
    if (!started.ok()) {
      spdlog::error("{}", started.status().ToString());
      return 1;
    }
    metrics_server = std::move(*started);
    spdlog::info("metrics on http://{}/metrics", metrics_server->address());
    if (!flags.metrics_ready_file.empty()) {
      auto s =
          baton::WriteFileAtomically(flags.metrics_ready_file, metrics_server->address() + "\n");
      if (!s.ok()) {
        spdlog::error("{}", s.ToString());
        return 1;
      }
    }
  }
  if (!flags.ready_file.empty()) {
    if (auto s = baton::WriteFileAtomically(flags.ready_file, bound + "\n"); !s.ok()) {
      spdlog::error("{}", s.ToString());
      return 1;
    }
  }
  int sig;
  // SIGHUP re-reads the flags and config file: the log level changes at once; the rest
  // (addresses, paths, isolation) needs a restart, which jobs survive.
  while ((sig = baton::WaitForStopSignal()) == SIGHUP) {
    try {
      Flags next = ParseFlags(argc, argv);
      baton::SetLogLevel(next.log_level);
      spdlog::info("SIGHUP: reloaded: log-level {}", next.log_level);
    } catch (const cxxopts::exceptions::exception& e) {
      spdlog::error("SIGHUP: kept the settings in effect: {}", e.what());
    }
  }
  spdlog::info("signal {}: stopping", sig);
  metrics_server.reset();
  agent.Stop();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
