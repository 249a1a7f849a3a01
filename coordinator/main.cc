// baton-coordinator: the cluster's job service. Owns the RocksDB store in --data-dir,
// serves the Coordinator API to researchers and AgentControl to node agents on --listen
// (TLS under the cluster CA; callers proven by MUNGE or service tokens, agents by their
// certificates), and Prometheus metrics (/metrics, /healthz) on --metrics-listen.
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/config_file.h"
#include "common/daemon.h"
#include "common/logging.h"
#include "common/metrics_server.h"
#include "common/net.h"
#include "common/version.h"
#include "coordinator/backup.h"
#include "coordinator/ha/ha_metrics.h"
#include "coordinator/ha/replica.h"
#include "coordinator/ha/snapshot.h"
#include "coordinator/ha/standby_service.h"
#include "coordinator/job_manager.h"
#include "coordinator/metrics.h"
#include "coordinator/policy_config.h"
#include "coordinator/service.h"
#include "coordinator/store.h"
#include "coordinator/web/web_server.h"
#include "proto/tls.h"

namespace {

struct Flags {
  std::string listen;
  std::string data_dir;
  std::string ready_file;
  std::string metrics_listen;
  std::string metrics_ready_file;
  baton::web::WebOptions web;  // --web-*: the dashboard (docs/web.md); listen "" is off
  std::string web_ready_file;
  std::string log_level;
  std::string policy_file;
  baton::TlsOptions tls;
  baton::AuthnOptions authn;
  baton::JobManagerOptions jm;
  size_t max_follows_per_user = 16;
  size_t max_follows = 1024;
  bool ha = false;  // --ha-etcd given: one of several replicas (docs/ha.md)
  baton::ha::ReplicaOptions replica;
};

constexpr char kDefaultConfig[] = "/etc/baton/coordinator.yaml";

// The flags, with the config file's settings (common/config_file.h) under them.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  cxxopts::Options opts(
      "baton-coordinator",
      "baton's job service (gRPC + RocksDB).\n\n`baton-coordinator restore BACKUP_DIR [--config "
      "FILE] [--data-dir DIR] [--new-cluster]` restores a backup written by `baton admin backup` "
      "into the data dir, which must be absent or empty (stop the coordinator first), and "
      "exits. A backup of an HA replica keeps its cluster's identity (it joins that cluster as "
      "a replica); --new-cluster forgets it, so that on a prefix of its own it seeds a new "
      "replica set (docs/ha.md).");
  opts.add_options()("listen", "host:port to serve on (loopback or private; port 0 picks one)",
                     cxxopts::value<std::string>()->default_value("127.0.0.1:7070"))(
      "data-dir", "directory of the RocksDB store (created if missing)",
      cxxopts::value<std::string>()->default_value("/var/lib/baton/coordinator"))(
      "ready-file", "write the bound address here once serving",
      cxxopts::value<std::string>()->default_value(""))(
      "metrics-listen",
      "host:port for Prometheus /metrics and /healthz (loopback or private; port 0 picks one; "
      "empty: off)",
      cxxopts::value<std::string>()->default_value(""))(
      "metrics-ready-file", "write the bound metrics address here once serving",
      cxxopts::value<std::string>()->default_value(""))(
      "web-listen",
      "host:port for the web dashboard (TLS; plaintext only on loopback; port 0 picks one; "
      "empty: off)",
      cxxopts::value<std::string>()->default_value(""))(
      "web-tls-cert",
      "the dashboard's certificate (PEM) for browsers; default: the coordinator's --tls-cert",
      cxxopts::value<std::string>()->default_value(""))(
      "web-tls-key", "its key; default: --tls-key",
      cxxopts::value<std::string>()->default_value(""))(
      "web-host",
      "host:port names browsers reach the dashboard by, beside its bound address "
      "(comma-separated); requests naming any other Host are refused",
      cxxopts::value<std::string>()->default_value(""))(
      "web-url", "the dashboard's base URL in login links (default: from its address)",
      cxxopts::value<std::string>()->default_value(""))(
      "web-ready-file", "write the dashboard's bound address here once serving",
      cxxopts::value<std::string>()->default_value(""))(
      "heartbeat", "agent heartbeat interval", cxxopts::value<std::string>()->default_value("1s"))(
      "lease",
      "agent lease: an agent that hears nothing this long reconnects (its jobs keep running); "
      "a node silent for lease + --lost-margin is lost and its jobs are replaced as the "
      "policy's stop_after_disconnect allows",
      cxxopts::value<std::string>()->default_value("10s"))(
      "policy",
      "scheduling policy YAML (classes, tenants, quotas, pools; see "
      "scripts/policy.example.yaml); default: the built-in classes",
      cxxopts::value<std::string>()->default_value(""))(
      "lost-margin", "a node is declared lost after lease + this margin",
      cxxopts::value<std::string>()->default_value("5s"))(
      "grace-cap-factor",
      "an eviction's grace extends while its checkpoint is written, up to this many times "
      "the job's grace after the signal (then the job is killed)",
      cxxopts::value<double>()->default_value("3"))(
      "tls-ca", "the cluster CA bundle (PEM): agents' certificates must chain to it",
      cxxopts::value<std::string>()->default_value("/etc/baton/tls/ca.crt"))(
      "tls-cert", "this coordinator's certificate (PEM, O=baton-coordinator)",
      cxxopts::value<std::string>()->default_value("/etc/baton/tls/coordinator.crt"))(
      "tls-key", "its private key (PEM)",
      cxxopts::value<std::string>()->default_value("/etc/baton/tls/coordinator.key"))(
      "insecure",
      "plaintext, no certificates: development only, refused unless --listen is loopback")(
      "munge-socket", "this host's munged socket (decodes the CLI's credentials)",
      cxxopts::value<std::string>()->default_value(baton::kDefaultMungeSocket))(
      "retention",
      "finished jobs, their events and (on the agents) their logs are deleted this long after "
      "they end; 0: kept forever",
      cxxopts::value<std::string>()->default_value("30d"))(
      "usage-retention",
      "days of the usage rollup (baton usage) are deleted this long after they end, "
      "independently of --retention; 0: kept forever",
      cxxopts::value<std::string>()->default_value("400d"))(
      "min-free-disk",
      "below this much free space on --data-dir's disk new work is refused (reads are served); "
      "below a quarter of it writes wait for space",
      cxxopts::value<std::string>()->default_value("256Mi"))(
      "max-follows-per-user", "followed streams (events -f, logs -f) one user may hold open",
      cxxopts::value<size_t>()->default_value("16"))(
      "max-follows", "followed streams open in all",
      cxxopts::value<size_t>()->default_value("1024"))(
      "ha-etcd",
      "run as one of several replicas, of which one leads, with the replicated log in this "
      "etcd cluster (comma-separated endpoints; http:// only on loopback); empty: a single "
      "coordinator on its own store (docs/ha.md)",
      cxxopts::value<std::string>()->default_value(""))(
      "ha-prefix", "this cluster's keys in etcd (one prefix per baton cluster)",
      cxxopts::value<std::string>()->default_value("/baton"))(
      "ha-ttl",
      "the leader's etcd lease: a leader that cannot renew it stops leading, and a standby "
      "takes over, within this long (at least 2s)",
      cxxopts::value<std::string>()->default_value("5s"))(
      "ha-name", "this replica's name, unique in the cluster (default: the host name)",
      cxxopts::value<std::string>()->default_value(""))(
      "ha-advertise",
      "host:port clients and agents reach this replica at (default: --listen's bound address)",
      cxxopts::value<std::string>()->default_value(""))(
      "ha-keep-entries",
      "log entries the leader keeps in etcd (the window, at least 20); a standby further "
      "behind restores a snapshot of the leader's store",
      cxxopts::value<uint64_t>()->default_value("10000"))(
      "ha-etcd-ca", "etcd's own CA (PEM), for https:// endpoints",
      cxxopts::value<std::string>()->default_value("/etc/baton/etcd/ca.crt"))(
      "ha-etcd-cert", "this coordinator's client certificate for etcd (PEM)",
      cxxopts::value<std::string>()->default_value("/etc/baton/etcd/coordinator.crt"))(
      "ha-etcd-key", "its private key (PEM)",
      cxxopts::value<std::string>()->default_value("/etc/baton/etcd/coordinator.key"))(
      "log-level", "trace, debug, info, warn, error",
      cxxopts::value<std::string>()->default_value("info"))("h,help", "show this help")(
      "version", "print the version and exit");
  baton::AddConfigFileFlags(opts, kDefaultConfig);
  try {
    auto parsed = baton::ParseWithConfigFile(opts, argc, argv, kDefaultConfig);
    if (!parsed.ok()) return parsed.status();
    const cxxopts::ParseResult& r = *parsed;
    if (r.count("help")) {
      std::cout << opts.help() << "\n";
      std::exit(0);
    }
    if (r.count("version")) {
      std::cout << "baton-coordinator " << baton::Version() << "\n";
      std::exit(0);
    }
    if (!r.unmatched().empty())
      throw cxxopts::exceptions::exception("unexpected argument '" + r.unmatched()[0] + "'");
    Flags f;
    f.listen = r["listen"].as<std::string>();
    f.data_dir = r["data-dir"].as<std::string>();
    f.ready_file = r["ready-file"].as<std::string>();
    f.metrics_listen = r["metrics-listen"].as<std::string>();
    f.metrics_ready_file = r["metrics-ready-file"].as<std::string>();
    f.web.listen = r["web-listen"].as<std::string>();
    f.web.tls_cert = r["web-tls-cert"].as<std::string>();
    f.web.tls_key = r["web-tls-key"].as<std::string>();
    for (absl::string_view h :
         absl::StrSplit(r["web-host"].as<std::string>(), ',', absl::SkipWhitespace())) {
      f.web.hosts.emplace_back(absl::StripAsciiWhitespace(h));
    }
    f.web.public_url = r["web-url"].as<std::string>();
    f.web_ready_file = r["web-ready-file"].as<std::string>();
    f.log_level = r["log-level"].as<std::string>();
    auto duration = [&](const char* flag) {
      auto d = baton::ParseDuration(r[flag].as<std::string>());
      if (!d.ok()) {
        throw cxxopts::exceptions::exception("--" + std::string(flag) + ": " +
                                             std::string(d.status().message()));
      }
      return *d;
    };
    f.jm.heartbeat_interval = duration("heartbeat");
    f.jm.lease = duration("lease");
    f.jm.lost_margin = duration("lost-margin");
    f.policy_file = r["policy"].as<std::string>();
    f.jm.grace_cap_factor = r["grace-cap-factor"].as<double>();
    f.tls.ca_file = r["tls-ca"].as<std::string>();
    f.tls.cert_file = r["tls-cert"].as<std::string>();
    f.tls.key_file = r["tls-key"].as<std::string>();
    f.tls.insecure = r.count("insecure") > 0;
    f.authn.munge_socket = r["munge-socket"].as<std::string>();
    auto min_free = baton::ParseBytes(r["min-free-disk"].as<std::string>());
    if (!min_free.ok()) {
      throw cxxopts::exceptions::exception("--min-free-disk: " +
                                           std::string(min_free.status().message()));
    }
    f.jm.min_free_disk_bytes = *min_free;
    auto retention = baton::ParseDurationSeconds(r["retention"].as<std::string>());  // "0" too
    if (!retention.ok()) {
      throw cxxopts::exceptions::exception("--retention: " +
                                           std::string(retention.status().message()));
    }
    f.jm.retention = absl::Seconds(*retention);
    auto usage_retention = baton::ParseDurationSeconds(r["usage-retention"].as<std::string>());
    if (!usage_retention.ok()) {
      throw cxxopts::exceptions::exception("--usage-retention: " +
                                           std::string(usage_retention.status().message()));
    }
    f.jm.usage_retention = absl::Seconds(*usage_retention);
    f.max_follows_per_user = r["max-follows-per-user"].as<size_t>();
    f.max_follows = r["max-follows"].as<size_t>();
    if (f.max_follows_per_user == 0 || f.max_follows < f.max_follows_per_user) {
      throw cxxopts::exceptions::exception(
          "--max-follows-per-user must be >= 1 and --max-follows at least as large");
    }
    if (f.jm.heartbeat_interval <= absl::ZeroDuration() ||
        f.jm.lease < 2 * f.jm.heartbeat_interval || f.jm.lost_margin < absl::ZeroDuration()) {
      throw cxxopts::exceptions::exception("--heartbeat must be > 0 and --lease at least twice it");
    }
    if (!(f.jm.grace_cap_factor >= 1 && f.jm.grace_cap_factor <= 100)) {
      throw cxxopts::exceptions::exception("--grace-cap-factor must be between 1 and 100");
    }
    if (std::string etcd = r["ha-etcd"].as<std::string>(); !etcd.empty()) {
      f.ha = true;
      baton::ha::ReplicaOptions& o = f.replica;
      o.etcd.endpoints = absl::StrSplit(etcd, ',', absl::SkipWhitespace());
      o.etcd.ca_file = r["ha-etcd-ca"].as<std::string>();
      o.etcd.cert_file = r["ha-etcd-cert"].as<std::string>();
      o.etcd.key_file = r["ha-etcd-key"].as<std::string>();
      if (auto s = baton::ha::CheckEtcdOptions(o.etcd); !s.ok()) {
        throw cxxopts::exceptions::exception("--ha-etcd: " + std::string(s.message()));
      }
      o.prefix = r["ha-prefix"].as<std::string>();
      o.ttl = duration("ha-ttl");
      o.name = r["ha-name"].as<std::string>();
      if (o.name.empty()) {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        o.name = host;
      }
      o.address = r["ha-advertise"].as<std::string>();
      o.keep_entries = r["ha-keep-entries"].as<uint64_t>();
      if (o.keep_entries < 20) {
        throw cxxopts::exceptions::exception("--ha-keep-entries must be at least 20");
      }
    }
    return f;
  } catch (const cxxopts::exceptions::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

// `baton-coordinator restore BACKUP_DIR [flags]`: the data dir from the flags and config.
int Restore(int argc, char** argv) {
  if (argc < 3 || argv[2][0] == '-') {
    std::cerr << "baton-coordinator restore: usage: baton-coordinator restore BACKUP_DIR "
                 "[--config FILE] [--data-dir DIR] [--new-cluster]\n";
    return 2;
  }
  const std::string backup = argv[2];
  std::vector<char*> rest = {argv[0]};
  bool new_cluster = false;
  for (int i = 3; i < argc; ++i) {
    if (std::string(argv[i]) == "--new-cluster") {
      new_cluster = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  auto flags = ParseFlags(static_cast<int>(rest.size()), rest.data());
  if (!flags.ok()) {
    std::cerr << "baton-coordinator restore: " << flags.status().message() << "\n";
    return 2;
  }
  std::cerr << "restoring " << backup << " into " << flags->data_dir << " ...\n";
  auto done = baton::RestoreStore(backup, flags->data_dir);
  if (!done.ok()) {
    std::cerr << "baton-coordinator " << done.status().message() << "\n";
    return 1;
  }
  std::cout << "restored " << flags->data_dir << " from " << backup << " (taken "
            << absl::FormatTime("%Y-%m-%d %H:%M:%S UTC",
                                absl::FromUnixMillis(done->manifest.created_ms()),
                                absl::UTCTimeZone())
            << " by coordinator " << done->manifest.coordinator_version() << "): " << done->jobs
            << " jobs (" << done->unfinished << " not finished), next job id " << done->next_job_id
            << ", " << done->manifest.files_size() << " files, " << done->bytes << " bytes\n";
  auto store = baton::Store::Open(flags->data_dir, {});
  auto ha = store.ok() ? (*store)->ReadHaState() : store.status();
  if (!ha.ok()) {
    std::cerr << "baton-coordinator restore: " << ha.status().message() << "\n";
    return 1;
  }
  if (ha->cluster_id.empty()) return 0;
  if (!new_cluster) {
    std::cout << "it belongs to HA cluster " << ha->cluster_id << " (log applied up to "
              << ha->applied
              << "): started with that cluster's --ha-etcd and --ha-prefix it joins it as a "
                 "replica; restore with --new-cluster to seed a new replica set instead\n";
    return 0;
  }
  if (absl::Status s = (*store)->WriteHaState({"", 0}); !s.ok()) {
    std::cerr << "baton-coordinator restore: " << s.message() << "\n";
    return 1;
  }
  std::cout << "forgot HA cluster " << ha->cluster_id
            << ": started with --ha-etcd on a prefix of its own, it seeds a new replica set "
               "(alone, it runs as a single coordinator)\n";
  return 0;
}

// HA: joins the cluster, serves refusals naming the leader on --listen while following
// the log, and returns once this replica leads (Cancelled when stopped first). `listen`
// becomes the bound address, which the leader's server takes over.
// Serves /metrics on --metrics-listen (if set) and writes --metrics-ready-file.
absl::StatusOr<std::unique_ptr<baton::MetricsServer>> StartMetrics(
    const Flags& flags, std::vector<std::shared_ptr<prometheus::Collectable>> collectables) {
  auto started =
      baton::MetricsServer::Start({flags.metrics_listen, std::move(collectables), nullptr});
  if (!started.ok()) return started.status();
  spdlog::info("metrics on http://{}/metrics", (*started)->address());
  if (!flags.metrics_ready_file.empty()) {
    auto s = baton::WriteFileAtomically(flags.metrics_ready_file, (*started)->address() + "\n");
    if (!s.ok()) return s;
  }
  return started;
}

// Serves the web dashboard on --web-listen (if set; nullptr when not), with the
// coordinator's certificate unless it has one of its own, and writes --web-ready-file.
// Service tokens reach its JSON endpoints as Bearer tokens, checked as for gRPC.
absl::StatusOr<std::unique_ptr<baton::web::WebServer>> StartWeb(
    const Flags& flags, const baton::TlsMaterial& tls, baton::JobManager* jobs,
    baton::web::Sessions* sessions, const baton::Authenticator* authn,
    std::shared_ptr<baton::StreamQuota> follows, baton::AgentChannels* agents) {
  if (flags.web.listen.empty()) return nullptr;
  baton::web::WebOptions options = flags.web;
  if (options.tls_cert.empty() && options.tls_key.empty() && !tls.insecure) {
    options.tls_cert = flags.tls.cert_file;
    options.tls_key = flags.tls.key_file;
  }
  auto token_check = [authn](std::string_view token) { return authn->FromToken(token); };
  auto started = baton::web::WebServer::Start(std::move(options), {.jobs = jobs,
                                                                   .sessions = sessions,
                                                                   .token_check = token_check,
                                                                   .clock = baton::RealClock::Get(),
                                                                   .follows = std::move(follows),
                                                                   .agents = agents});
  if (!started.ok()) return started.status();
  spdlog::info("web dashboard on {} (baton ui prints a login link)", (*started)->LoginLink(""));
  if (!flags.web_ready_file.empty()) {
    auto s = baton::WriteFileAtomically(flags.web_ready_file, (*started)->address() + "\n");
    if (!s.ok()) return s;
  }
  return started;
}

// A standby the log cannot bring up to date (OutOfRange from FollowUntilLeading) fetches
// a snapshot of the leader's store beside its data dir, retrying until it has one, and
// names it in `*snapshot_dir` (main installs it with the store closed and re-executes).
absl::Status FetchSnapshotFromLeader(const Flags& flags, const baton::TlsMaterial& tls,
                                     baton::ha::Replica* replica, std::string* snapshot_dir) {
  const std::string dir = flags.data_dir + ".snapshot-" + std::to_string(::getpid());
  baton::ha::RemoveSnapshotLeftovers(flags.data_dir);
  absl::Time said = absl::InfinitePast();
  for (;;) {
    if (int sig = baton::PollStopSignal(); sig == SIGINT || sig == SIGTERM) {
      return absl::CancelledError("stopped while waiting for a snapshot");
    }
    absl::Status s;
    auto leader = replica->Leader();
    if (!leader.ok()) {
      s = leader.status();
    } else if (leader->epoch == 0 || leader->member.name() == replica->name()) {
      s = absl::UnavailableError("no replica leads to take a snapshot from");
    } else {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      spdlog::info("HA: fetching a snapshot of the leader's store from {} ({})",
                   leader->member.name(), leader->member.address());
      s = baton::ha::FetchSnapshot({leader->member.address(), tls, replica->cluster_id(),
                                    replica->name(), replica->applied()},
                                   dir);
      if (s.ok()) {
        *snapshot_dir = dir;
        return absl::OkStatus();
      }
    }
    if (absl::Now() - said > absl::Seconds(10)) {
      spdlog::warn("HA: no snapshot yet, trying again: {}", s.ToString());
      said = absl::Now();
    }
    absl::SleepFor(absl::Seconds(1));
  }
}

absl::Status RunStandby(Flags& flags, baton::Store* store, const baton::TlsMaterial& tls,
                        const std::shared_ptr<grpc::ServerCredentials>& creds, char** argv,
                        std::string* listen, std::unique_ptr<baton::ha::Replica>* replica,
                        std::shared_ptr<baton::LateCollectable> late_metrics,
                        std::unique_ptr<baton::MetricsServer>* metrics_server,
                        std::string* snapshot_dir) {
  std::atomic<baton::ha::Replica*> joined{nullptr};
  baton::ha::StandbyService standby(
      [&] {
        baton::ha::Replica* r = joined.load();
        return r ? r->last_leader() : baton::ha::LeaderInfo();
      },
      flags.replica.name);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(*listen, creds, &port);
  builder.RegisterCallbackGenericService(&standby);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return absl::UnavailableError("cannot listen on " + *listen);
  server->GetHealthCheckService()->SetServingStatus(baton::kLeaderHealthService, false);
  *listen = listen->substr(0, listen->rfind(':')) + ":" + std::to_string(port);
  baton::ha::ReplicaOptions options = flags.replica;
  if (options.address.empty()) {
    std::string host = listen->substr(0, listen->rfind(':'));
    if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
      return absl::InvalidArgumentError(
          "--ha-advertise is needed when --listen is a wildcard address");
    }
    options.address = *listen;
  }
  options.lost = [argv](const absl::Status&) {
    // Everything in memory goes: the process starts again and rejoins as a standby.
    absl::Status s = baton::ReExec(argv);
    spdlog::critical("{}", s.ToString());
  };
  // etcd out of reach (a replica cut off from it, or quorum lost) is waited out: the
  // replica joins as a standby once etcd answers. Any other refusal ends the process.
  auto r = baton::ha::Replica::Join(options, store, baton::RealClock::Get());
  for (absl::Time said = absl::InfinitePast(); absl::IsUnavailable(r.status());) {
    if (absl::Now() - said > absl::Seconds(10)) {
      spdlog::warn("HA: cannot reach etcd to join, trying again: {}", r.status().ToString());
      said = absl::Now();
    }
    if (int sig = baton::PollStopSignal(); sig == SIGINT || sig == SIGTERM) {
      return absl::CancelledError("stopped before joining");
    }
    absl::SleepFor(absl::Milliseconds(500));
    r = baton::ha::Replica::Join(options, store, baton::RealClock::Get());
  }
  if (!r.ok()) return r.status();
  joined = r->get();
  if (!flags.metrics_listen.empty()) {
    auto started =
        StartMetrics(flags, {std::make_shared<baton::ha::HaMetrics>(r->get()), late_metrics});
    if (!started.ok()) return started.status();
    *metrics_server = std::move(*started);
  }
  if (!flags.ready_file.empty()) {
    if (auto s = baton::WriteFileAtomically(flags.ready_file, *listen + "\n"); !s.ok()) return s;
  }
  spdlog::info("HA: replica {} is a standby on {} (cluster log in {}), applied up to {}",
               options.name, *listen, absl::StrJoin(options.etcd.endpoints, ","), (*r)->applied());
  int stop_signal = 0;
  auto epoch = (*r)->FollowUntilLeading([&] {
    int sig = baton::PollStopSignal();
    if (sig == SIGINT || sig == SIGTERM) stop_signal = sig;
    return stop_signal != 0;
  });
  if (absl::IsOutOfRange(epoch.status())) {
    // Still a standby (refusing calls, naming the leader) while the snapshot comes.
    spdlog::warn("{}", epoch.status().ToString());
    absl::Status fetched = FetchSnapshotFromLeader(flags, tls, r->get(), snapshot_dir);
    epoch = fetched.ok() ? absl::AbortedError("a snapshot to install") : fetched;
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  server.reset();
  if (!epoch.ok()) {
    if (stop_signal) spdlog::info("signal {}: the standby stops", stop_signal);
    metrics_server->reset();  // its replica metrics go with the replica
    return epoch.status();
  }
  *replica = std::move(*r);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "restore") return Restore(argc, argv);
  baton::BlockStopSignals();
  baton::DisableMutexDeadlockDetection();
  // The allocator is jemalloc (coordinator/CMakeLists.txt). It serves big buffers (a page
  // of jobs, its JSON, a snapshot) from memory it keeps: freed pages go back to the system
  // only after seconds unused (its dirty_decay_ms), so every 2 MiB page of `baton queue` or
  // of the dashboard's queue does not fault its memory in again, as glibc's defaults made
  // it do (half of the queue endpoint's time; baton-bench-web, docs/benchmarks.md).
  auto flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "baton-coordinator: " << flags.status().message() << "\n";
    return 2;
  }
  baton::InitLogging("coordinator", flags->log_level);
  if (auto hp = baton::SplitHostPort(flags->listen); !hp.ok()) {
    spdlog::error("--listen: {}", std::string(hp.status().message()));
    return 2;
  }
  if (!flags->metrics_listen.empty()) {
    if (auto s = baton::CheckListenAddress("--metrics-listen", flags->metrics_listen); !s.ok()) {
      spdlog::error("{}", std::string(s.message()));
      return 2;
    }
  }
  auto tls = baton::LoadTls(flags->tls, /*need_cert=*/true);
  if (!tls.ok()) {
    spdlog::error("{}", std::string(tls.status().message()));
    return 2;
  }
  auto server_creds = baton::ServerCredentials(*tls, flags->listen);
  if (!server_creds.ok()) {
    spdlog::error("{}", std::string(server_creds.status().message()));
    return 2;
  }
  if (tls->insecure) {
    spdlog::warn(
        "*** --insecure: PLAINTEXT on {}, agents NOT authenticated (any local process "
        "may register as any node). Development only. ***",
        flags->listen);
  }
  if (!flags->policy_file.empty()) {
    auto policy = baton::LoadPolicyFile(flags->policy_file);
    if (!policy.ok()) {
      spdlog::error("--policy {}: {}", flags->policy_file, std::string(policy.status().message()));
      return 2;
    }
    flags->jm.policy = std::move(*policy);
    std::ifstream in(flags->policy_file);
    flags->jm.policy_yaml.assign(std::istreambuf_iterator<char>(in), {});
    spdlog::info("policy from {}: {} classes, {} tenants", flags->policy_file,
                 flags->jm.policy.classes.size(), flags->jm.policy.tenants.size());
  }
  std::error_code ec;
  std::filesystem::create_directories(flags->data_dir, ec);
  auto store = baton::Store::Open(flags->data_dir, {});
  if (!store.ok()) {
    spdlog::error("{}", store.status().ToString());
    return 1;
  }
  std::string listen = flags->listen;
  std::unique_ptr<baton::ha::Replica> replica;
  // The coordinator's own metrics, once it serves; an HA replica serves its replica
  // metrics before that, as a standby.
  auto late_metrics = std::make_shared<baton::LateCollectable>();
  std::unique_ptr<baton::MetricsServer> metrics_server;
  if (flags->ha) {
    std::string snapshot;
    absl::Status led = RunStandby(*flags, store->get(), *tls, *server_creds, argv, &listen,
                                  &replica, late_metrics, &metrics_server, &snapshot);
    if (!snapshot.empty()) {
      // The store closes, the snapshot takes its place, and the process starts again.
      store->reset();
      if (absl::Status s = baton::ha::InstallSnapshot(snapshot, flags->data_dir); !s.ok()) {
        spdlog::error("HA: installing the snapshot: {}", s.ToString());
        return 1;
      }
      absl::Status s = baton::ReExec(argv);
      spdlog::critical("{}", s.ToString());
      return 1;
    }
    if (!led.ok()) {
      if (absl::IsCancelled(led)) return 0;  // stopped while a standby
      spdlog::error("{}", led.ToString());
      return 1;
    }
    flags->jm.commit_log = replica.get();
    flags->jm.leader_epoch = replica->epoch();
  }
  auto metrics =
      std::make_shared<baton::CoordinatorMetrics>(baton::RealClock::Get(), flags->jm.policy);
  baton::JobManager jobs(store->get(), baton::RealClock::Get(), flags->jm, metrics.get());
  if (auto s = jobs.Recover(); !s.ok()) {
    spdlog::error("recovery failed: {}", s.ToString());
    return 1;
  }
  baton::TokenRegistry tokens(baton::RealClock::Get());
  auto stored_tokens = store->get()->LoadTokens();
  if (!stored_tokens.ok()) {
    spdlog::error("loading service tokens: {}", stored_tokens.status().ToString());
    return 1;
  }
  tokens.Load(*stored_tokens);
  baton::UserDirectory users(baton::RealClock::Get());
  baton::Authenticator authn(flags->authn, &tokens, &users);
  baton::web::Sessions web_sessions;
  // One follow quota for gRPC streams and the dashboard's live views alike.
  auto follows =
      std::make_shared<baton::StreamQuota>(flags->max_follows_per_user, flags->max_follows);
  baton::AgentChannels agent_channels(*tls);
  auto web = StartWeb(*flags, *tls, &jobs, &web_sessions, &authn, follows, &agent_channels);
  if (!web.ok()) {
    spdlog::error("{}", web.status().ToString());
    return 2;
  }
  baton::ServiceDeps deps{.jobs = &jobs,
                          .store = store->get(),
                          .authn = &authn,
                          .tokens = &tokens,
                          .users = &users,
                          .tls = *tls,
                          .agents = &agent_channels,
                          .follows = follows,
                          .ha = replica.get(),
                          .web_login = nullptr};
  if (*web) {
    deps.web_login =
        [&web_sessions, server = web->get()](
            const baton::Caller& caller) -> absl::StatusOr<baton::v1::WebLoginResponse> {
      const absl::Time now = baton::RealClock::Get()->Now();
      absl::StatusOr<std::string> secret = web_sessions.IssueLink(caller, now);
      if (!secret.ok()) return secret.status();
      baton::v1::WebLoginResponse out;
      out.set_url(server->LoginLink(*secret));
      out.set_expires_ms(absl::ToUnixMillis(now + web_sessions.options().link_ttl));
      return out;
    };
  }
  baton::CoordinatorService api(std::move(deps));
  baton::AgentControlService agents(&jobs, tls->insecure);
  baton::ha::SnapshotService snapshots(store->get(), tls->insecure);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, *server_creds, &port);
  builder.RegisterService(&api);
  builder.RegisterService(&agents);
  if (replica) builder.RegisterService(&snapshots);  // for standbys behind the log's window
  baton::SetServerMessageLimits(&builder);
  // Agents ping every 10 s on an idle stream; allow it (a server that gets pings more often
  // than it allows drops the channel with too_many_pings: docs/recipes.md, gRPC).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::error("cannot listen on {}", listen);
    return 1;
  }
  // Clients given several replicas send their calls to the one that says SERVING here.
  server->GetHealthCheckService()->SetServingStatus(baton::kLeaderHealthService, true);
  std::string bound = listen.substr(0, listen.rfind(':')) + ":" + std::to_string(port);
  jobs.Start();
  spdlog::info("coordinator serving on {} with data in {}", bound, flags->data_dir);
  late_metrics->Set(metrics);
  if (!metrics_server && !flags->metrics_listen.empty()) {
    auto started = StartMetrics(*flags, {late_metrics});
    if (!started.ok()) {
      spdlog::error("{}", started.status().ToString());
      return 1;
    }
    metrics_server = std::move(*started);
  }
  if (!flags->ready_file.empty()) {
    if (auto s = baton::WriteFileAtomically(flags->ready_file, bound + "\n"); !s.ok()) {
      spdlog::error("{}", s.ToString());
      return 1;
    }
  }
  int sig;
  // SIGHUP re-reads the flags and config file: the log level and the follow limits
  // change at once; the rest (addresses, paths, timings) needs a restart. The policy is
  // not reloaded: its truth is the stored versions (baton admin policy set).
  while ((sig = baton::WaitForStopSignal()) == SIGHUP) {
    auto next = ParseFlags(argc, argv);
    if (!next.ok()) {
      spdlog::error("SIGHUP: kept the settings in effect: {}",
                    std::string(next.status().message()));
      continue;
    }
    baton::SetLogLevel(next->log_level);
    api.SetFollowLimits(next->max_follows_per_user, next->max_follows);
    if (!next->policy_file.empty()) {
      // Checked, never applied: the policy in force is the newest stored version.
      auto policy = baton::LoadPolicyFile(next->policy_file);
      if (!policy.ok()) {
        spdlog::error(
            "SIGHUP: --policy {} does not check; the policy in force (version {}) "
            "stays: {}",
            next->policy_file, jobs.GetPolicy().version(), std::string(policy.status().message()));
      } else {
        spdlog::info(
            "SIGHUP: --policy {} checks; the policy in force stays its stored version "
            "{} (apply a file with `baton admin policy set`)",
            next->policy_file, jobs.GetPolicy().version());
      }
    }
    spdlog::info("SIGHUP: reloaded: log-level {}, max-follows-per-user {}, max-follows {}",
                 next->log_level, next->max_follows_per_user, next->max_follows);
  }
  spdlog::info("signal {}: shutting down", sig);
  metrics_server.reset();
  web->reset();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  jobs.Stop();
  replica.reset();  // revokes its lease: a standby takes over now, not after --ha-ttl
  return 0;
}
