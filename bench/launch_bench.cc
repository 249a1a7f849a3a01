// baton-bench-launch: time from the coordinator's launch decision to every rank running,
// for mpi-mode gangs of 1, 2 and 4 namespace nodes, next to a plain mpirun of the same
// program on the same hosts (its remote daemons started with nsenter, the fastest "ssh"
// there is). Ranks append "<rank> <unix ns>" to a file when they start. Keys per size:
// launch_overhead_ms_<n>n (baton's extra ms) and launch_vs_mpirun_<n>n (the ratio).
// Needs root (it builds a namespace cluster with scripts/netns-cluster.sh).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/bench_flags.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"

namespace {

using baton::testing::CommandResult;
using baton::testing::ReadFile;
using baton::testing::RunProcess;

const std::string kName = "bl";
const std::string kSubnet = "10.79.0";

std::string BinDir() { return std::filesystem::read_symlink("/proc/self/exe").parent_path(); }
std::string SourceDir() { return BATON_SOURCE_DIR; }
std::string State() { return "/tmp/" + kName + "-netns"; }

// BenchPolicy: root, who runs this benchmark's CLI, may run its probe jobs as root.
std::string PolicyFile() { return "/tmp/" + kName + "-bench-policy.yaml"; }

std::map<std::string, std::string> ScriptEnv() {
  return {{"BATON_NETNS_NAME", kName},
          {"BATON_NETNS_SUBNET", kSubnet},
          {"BATON_BIN", BinDir()},
          {"BATON_COORDINATOR_ARGS", "--policy " + PolicyFile()}};
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The latest start time (ns) of `ranks` ranks recorded in `file`; -1 if some are missing.
int64_t LastRankStart(const std::string& file, int ranks) {
  std::istringstream in(ReadFile(file));
  int rank, seen = 0;
  int64_t t, last = -1;
  while (in >> rank >> t) {
    ++seen;
    last = std::max(last, t);
  }
  return seen == ranks ? last : -1;
}

std::string ProbeCommand(const std::string& file) {
  return "echo $OMPI_COMM_WORLD_RANK $(date +%s%N) >> " + file;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// baton: submit and wait; decision = the attempt's scheduled_ms.
double BatonMs(const std::string& coordinator, int nodes, int rep) {
  std::string file = State() + "/baton-" + std::to_string(nodes) + "-" + std::to_string(rep);
  // As root, the built-in policy's admin and a member of tenant default; TLS and MUNGE
  // as netns-cluster.sh set them up.
  std::map<std::string, std::string> env = {
      {"BATON_COORDINATOR", coordinator},
      {"BATON_CA", State() + "/tls/ca.crt"},
      {"BATON_MUNGE_SOCKET", State() + "/munge/munge.socket"}};
  CommandResult r = RunProcess({BinDir() + "/baton", "submit", "--wait", "-q", "--mode", "mpi",
                                "--nodes", std::to_string(nodes), "--cpus", "1", "--restart",
                                "never", "--", "sh", "-c", ProbeCommand(file)},
                               env);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "baton launch on %d node(s) failed (%d): %s\n", nodes, r.exit_code,
                 r.err.c_str());
    return -1;
  }
  std::string id = r.out.substr(0, r.out.find('\n'));
  CommandResult st = RunProcess({BinDir() + "/baton", "status", id, "--json"}, env);
  size_t pos = st.out.find("\"scheduledMs\":\"");
  if (pos == std::string::npos) return -1;
  int64_t decided_ms = std::stoll(st.out.substr(pos + 15));
  int64_t last = LastRankStart(file, nodes);
  return last < 0 ? -1 : (last / 1e6) - decided_ms;
}

// Plain mpirun in node 1's namespace, daemons started with nsenter.
double PlainMs(int nodes, int rep) {
  std::string file = State() + "/plain-" + std::to_string(nodes) + "-" + std::to_string(rep);
  std::string hostfile = State() + "/hosts-" + std::to_string(nodes);
  std::ofstream(hostfile) << [&] {
    std::string h;
    for (int i = 1; i <= nodes; ++i) h += kSubnet + "." + std::to_string(10 + i) + " slots=1\n";
    return h;
  }();
  std::filesystem::create_directories(State() + "/plain-tmp/n1");
  int64_t t0 = NowNs();
  CommandResult r = RunProcess({"env",
                                "TMPDIR=" + State() + "/plain-tmp/n1",
                                "nsenter",
                                "--net=/var/run/netns/" + kName + "-n1",
                                "mpirun",
                                "--allow-run-as-root",
                                "-np",
                                std::to_string(nodes),
                                "--hostfile",
                                hostfile,
                                "--map-by",
                                "ppr:1:node",
                                "--mca",
                                "plm_rsh_agent",
                                State() + "/nsexec.sh",
                                "--mca",
                                "plm_rsh_no_tree_spawn",
                                "1",
                                "--mca",
                                "btl",
                                "self,tcp",
                                "--mca",
                                "btl_tcp_if_include",
                                kSubnet + ".0/24",
                                "--mca",
                                "oob_tcp_if_include",
                                kSubnet + ".0/24",
                                "sh",
                                "-c",
                                ProbeCommand(file)},
                               {});
  int64_t last = LastRankStart(file, nodes);
  if (r.exit_code != 0 || last < 0) {
    std::fprintf(stderr, "plain mpirun on %d node(s) failed (%d): %s\n", nodes, r.exit_code,
                 r.err.c_str());
    return -1;
  }
  return (last - t0) / 1e6;
}

void WriteNsExec() {
  // mpirun's "ssh": HOST (10.79.0.1N) -> namespace bl-nN; run the line there.
  std::string path = State() + "/nsexec.sh";
  // Each node gets its own TMPDIR, as baton gives each attempt: Open MPI's session
  // directories must not be shared by "nodes" on one machine.
  std::ofstream(path) << "#!/bin/sh\nhost=$1; shift\nn=$(( ${host##*.} - 10 ))\n"
                         "mkdir -p " +
                             State() +
                             "/plain-tmp/n$n\n"
                             "TMPDIR=" +
                             State() + "/plain-tmp/n$n exec nsenter --net=/var/run/netns/" + kName +
                             "-n$n sh -c \"$*\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options opts("baton-bench-launch", "decision to every rank running, vs mpirun");
  opts.add_options()("reps", "launches per gang size", cxxopts::value<int>()->default_value("5"));
  const cxxopts::ParseResult flags = baton::bench::ParseFlags(opts, argc, argv);
  const int reps = baton::bench::FlagAtLeast(opts, flags, "reps", 1);
  if (geteuid() != 0) {
    std::fprintf(stderr, "baton-bench-launch needs root (network namespaces)\n");
    return 1;
  }
  std::string script = SourceDir() + "/scripts/netns-cluster.sh";
  std::ofstream(PolicyFile()) << baton::testing::BenchPolicy();
  // One run at a time, and not before the teardown of a run killed before its end (a
  // Ctrl-C, a timeout), whose guard holds the lock until its cluster is down.
  const int lock =
      open(("/tmp/" + kName + "-bench.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) {
    std::fprintf(stderr, "baton-bench-launch: cannot lock /tmp/%s-bench.lock\n", kName.c_str());
    return 1;
  }
  RunProcess({script, "down"}, ScriptEnv());
  baton::testing::TeardownGuard guard({script, "down"}, ScriptEnv(), lock);
  CommandResult up = RunProcess({script, "up", "4", "0"}, ScriptEnv(), std::chrono::seconds(120));
  if (up.exit_code != 0) {
    std::fprintf(stderr, "netns-cluster.sh up failed: %s\n", up.err.c_str());
    RunProcess({script, "down"}, ScriptEnv());
    return 1;
  }
  std::string coordinator = ReadFile(State() + "/coordinator.addr");
  coordinator = coordinator.substr(0, coordinator.find('\n'));
  WriteNsExec();
  std::string json = "{";
  for (int nodes : {1, 2, 4}) {
    std::vector<double> baton, plain;
    for (int rep = 0; rep < reps; ++rep) {  // interleaved: noise hits both alike
      baton.push_back(BatonMs(coordinator, nodes, rep));
      plain.push_back(PlainMs(nodes, rep));
    }
    if (std::count(baton.begin(), baton.end(), -1.0) ||
        std::count(plain.begin(), plain.end(), -1.0)) {
      std::fprintf(stderr, "%d nodes: some launches failed\n", nodes);
      RunProcess({script, "down"}, ScriptEnv());
      return 1;
    }
    double b = Median(baton), p = Median(plain);
    std::printf(
        "%d node(s): baton decision->all ranks %.1f ms, plain mpirun %.1f ms: +%.1f ms, %.2fx\n",
        nodes, b, p, b - p, b / p);
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%s\"launch_overhead_ms_%dn\":%.1f,\"launch_vs_mpirun_%dn\":%.3f",
                  json.size() > 1 ? "," : "", nodes, b - p, nodes, b / p);
    json += buf;
  }
  RunProcess({script, "down"}, ScriptEnv());
  std::printf("%s}\n", json.c_str());
  return 0;
}
