// baton: the researchers' CLI. `baton COMMAND --help` for each command's flags.
#include <iostream>
#include <map>

#include "common/version.h"
#include "launcher/cli/client.h"
#include "launcher/cli/commands.h"

namespace {

constexpr char kUsageText[] =
    "usage: baton COMMAND [flags]\n"
    "\n"
    "commands:\n"
    "  submit [flags] -- CMD...   submit a job (or -f job.yaml); --wait follows it\n"
    "  queue                      running and pending jobs (--all: finished too)\n"
    "  status JOB...              state, placement, attempts and events of jobs\n"
    "  explain JOB                why a job waits, whom it would evict\n"
    "  logs JOB [-f]              a job's output\n"
    "  cancel JOB...              cancel jobs\n"
    "  hold JOB... | release JOB...   keep waiting jobs from starting, and let them\n"
    "  requeue JOB...             stop started jobs (checkpoint) and put them back in line\n"
    "  signal JOB... [-s USR1]    ask running jobs to checkpoint (USR1) or USR2 their ranks\n"
    "  nodes                      nodes and what they hold\n"
    "  nodes drain NODE [--evict] | undrain NODE   no new work on a node; --evict moves\n"
    "                             its jobs (admins)\n"
    "  share                      tenants' fair-share standing (usage vs weight, quota)\n"
    "  usage [--since 30d] [--by tenant|user|class]   GPU-hours, outcomes and queue waits\n"
    "  history [--user U] [--since 7d] [--state S]    finished jobs: start, end, exit, GPU-h\n"
    "  policy get | set FILE      the scheduling policy; admins replace it (versioned;\n"
    "                             also `baton admin policy ...`)\n"
    "  events [--job J] [-f]      the event log: transitions, scheduling, evictions, refused\n"
    "                             specs, policy and node changes\n"
    "  whoami                     who the coordinator takes you to be, your tenants\n"
    "  ui                         a one-time login link to the web dashboard\n"
    "  admin token create|list|revoke   service tokens for automation (admins)\n"
    "  admin backup DIR           a consistent copy of the coordinator's store (admins)\n"
    "  admin ha status|step-down  HA replicas: who leads, lag, etcd; hand over (admins)\n"
    "  capacity --services F --plan F   size the inference and training pools, quotas and\n"
    "                             lending limits; prints the policy YAML (no coordinator)\n"
    "  version                    this client's version (also --version)\n"
    "\n"
    "output: every read command takes --json; the listings (queue, status, explain,\n"
    "  nodes, share, events, usage, history, admin token list) take\n"
    "  -o wide|json|yaml|name|csv and --no-headers too\n"
    "environment: BATON_COORDINATOR (host:port), BATON_CA (cluster CA bundle, default\n"
    "  /etc/baton/tls/ca.crt), BATON_MUNGE_SOCKET (default /run/munge/munge.socket.2),\n"
    "  BATON_TOKEN (a service token instead of MUNGE), BATON_TENANT (submit's --tenant)\n"
    "exit codes: 0 ok, 1 error, 2 bad usage or spec, 3 not found, 4 denied or unproven,\n"
    "            5 coordinator unavailable, 6 wrong state, 7 throttled or the coordinator's\n"
    "            disk full (retry in the time given); submit --wait: the job's code\n";

}  // namespace

int main(int argc, char** argv) {
  using baton::cli::Args;
  static const std::map<std::string, int (*)(const Args&)> kCommands = {
      {"submit", baton::cli::RunSubmit},   {"queue", baton::cli::RunQueue},
      {"status", baton::cli::RunStatus},   {"logs", baton::cli::RunLogs},
      {"cancel", baton::cli::RunCancel},   {"nodes", baton::cli::RunNodes},
      {"signal", baton::cli::RunSignal},   {"explain", baton::cli::RunExplain},
      {"policy", baton::cli::RunPolicy},   {"share", baton::cli::RunShare},
      {"admin", baton::cli::RunAdmin},     {"events", baton::cli::RunEvents},
      {"whoami", baton::cli::RunWhoAmI},   {"capacity", baton::cli::RunCapacity},
      {"hold", baton::cli::RunHold},       {"release", baton::cli::RunRelease},
      {"requeue", baton::cli::RunRequeue}, {"usage", baton::cli::RunUsage},
      {"history", baton::cli::RunHistory}, {"ui", baton::cli::RunUi},
  };
  if (argc >= 2 && (std::string(argv[1]) == "--version" || std::string(argv[1]) == "version")) {
    std::cout << "baton " << baton::Version() << "\n";
    return baton::cli::kOk;
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsageText;
    return argc < 2 ? baton::cli::kUsage : baton::cli::kOk;
  }
  if (std::string(argv[1]) == "nodes" && argc >= 3 &&
      (std::string(argv[2]) == "drain" || std::string(argv[2]) == "undrain")) {
    baton::cli::ExitNow(baton::cli::RunNodeDrain(Args(argv + 2, argv + argc)));
  }
  auto it = kCommands.find(argv[1]);
  if (it == kCommands.end()) {
    std::cerr << "baton: unknown command '" << argv[1] << "'\n\n" << kUsageText;
    return baton::cli::kUsage;
  }
  baton::cli::ExitNow(it->second(Args(argv + 2, argv + argc)));  // gRPC may be in use
}
