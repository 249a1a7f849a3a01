// baton nodes drain NODE [--evict] [--reason TEXT] | undrain NODE (admins), and
// baton admin backup DIR: the operator's commands.
#include <unistd.h>

#include <iostream>
#include <optional>

#include "common/backup_dir.h"
#include "common/resources.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/options.h"

namespace baton::cli {

int RunNodeDrain(const Args& args) {
  const bool drain = !args.empty() && args[0] == "drain";
  const std::string verb = drain ? "drain" : "undrain";
  cxxopts::Options opts(
      "baton nodes " + verb,
      drain ? "Drain a node (admins): it takes no new work; what runs there stays, unless "
              "--evict tells its jobs to checkpoint and exit, to be placed elsewhere at once "
              "(no cooldown, no eviction counted against them)."
            : "Undrain a node (admins): it takes work again.");
  opts.add_options()("node", "node name", cxxopts::value<std::vector<std::string>>());
  if (drain) {
    opts.add_options()("evict", "evict its jobs: they checkpoint and move")(
        "reason", "why (shown by `baton nodes` and in the event log)",
        cxxopts::value<std::string>()->default_value(""));
  }
  opts.parse_positional({"node"});
  opts.positional_help("NODE");
  const std::string cmd = "nodes " + verb;
  return RunOneCall(
      opts, Args(args.begin() + 1, args.end()), cmd.c_str(),
      [&](Client& client, const cxxopts::ParseResult& r) {
        if (!r.count("node") || r["node"].as<std::vector<std::string>>().size() != 1) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "give exactly one node name");
        }
        const std::string node = r["node"].as<std::vector<std::string>>().front();
        v1::Node resp;
        auto ctx = client.Context();
        grpc::Status s;
        if (drain) {
          v1::DrainNodeRequest req;
          req.set_node(node);
          req.set_evict(r.count("evict") > 0);
          req.set_reason(r["reason"].as<std::string>());
          s = client.stub()->DrainNode(ctx.get(), req, &resp);
        } else {
          v1::UndrainNodeRequest req;
          req.set_node(node);
          s = client.stub()->UndrainNode(ctx.get(), req, &resp);
        }
        if (!s.ok()) return s;
        if (r.count("json")) {
          std::cout << ToJson(resp) << "\n";
        } else if (drain) {
          std::cout << "node " << node << " drained"
                    << (r.count("evict") ? ": its jobs checkpoint and move" : "") << "\n";
        } else {
          std::cout << "node " << node << " undrained\n";
        }
        return s;
      });
}

int RunBackup(const Args& args) {
  cxxopts::Options opts("baton admin backup",
                        "Back up the coordinator's store while it serves (admins): a consistent "
                        "copy written into DIR, which must not exist, with a manifest of every "
                        "file's size and SHA-256. Restore it with `baton-coordinator restore "
                        "DIR` on a stopped coordinator.");
  opts.add_options()("dir", "the new backup directory", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"dir"});
  opts.positional_help("DIR");
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  if (!r->count("dir") || (*r)["dir"].as<std::vector<std::string>>().size() != 1) {
    std::cerr << "baton admin backup: give exactly one directory\n";
    return kUsage;
  }
  const std::string dir = (*r)["dir"].as<std::vector<std::string>>().front();
  auto writer = BackupWriter::Start(dir);
  if (!writer.ok()) {
    std::cerr << "baton admin " << writer.status().message() << "\n";
    return kError;
  }
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  auto ctx = client.Context(/*streaming=*/true);
  auto reader = client.stub()->Backup(ctx.get(), v1::BackupRequest());
  const bool progress = ::isatty(STDERR_FILENO);
  v1::BackupChunk chunk;
  std::optional<v1::BackupManifest> manifest;
  absl::Status local = absl::OkStatus();
  uint64_t shown = 0;
  while (local.ok() && reader->Read(&chunk)) {
    if (chunk.has_manifest()) {
      manifest = chunk.manifest();
      continue;
    }
    local = writer->Add(chunk);
    if (progress && writer->bytes() - shown >= (64u << 20)) {
      shown = writer->bytes();
      std::cerr << "\rbackup: " << FormatBytes(shown) << " in " << writer->files() << " files"
                << std::flush;
    }
  }
  if (!local.ok()) ctx->TryCancel();
  grpc::Status s = reader->Finish();
  if (progress && shown > 0) std::cerr << "\n";
  if (!local.ok()) {  // this machine's side: the files, not the coordinator
    std::cerr << "baton admin " << local.message() << "\n";
    return kError;
  }
  if (!s.ok()) return ReportError("admin backup", s, conn->coordinator);
  if (!manifest) {
    std::cerr << "baton admin backup: the stream ended without a manifest\n";
    return kError;
  }
  if (absl::Status done = writer->Finish(*manifest); !done.ok()) {
    std::cerr << "baton admin " << done.message() << "\n";
    return kError;
  }
  if (r->count("json")) {
    std::cout << ToJson(*manifest) << "\n";
  } else {
    std::cout << "backup written to " << dir << ": " << manifest->files_size() << " files, "
              << FormatBytes(writer->bytes()) << " (coordinator " << manifest->coordinator_version()
              << ")\n";
  }
  return kOk;
}

}  // namespace baton::cli
