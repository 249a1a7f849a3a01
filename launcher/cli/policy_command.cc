// baton policy get | set FILE: the scheduling policy in force, and admins replacing it;
// baton share: every tenant's fair-share standing under it.
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/clock.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"

namespace baton::cli {
namespace {

std::string VersionLine(const v1::PolicyVersion& v) {
  if (v.version() == 0) return "# policy version 0: the coordinator's --policy file or default\n";
  std::ostringstream out;
  out << "# policy version " << v.version() << ", set by " << v.author() << " "
      << Ago(v.time_ms(), RealClock::Get()->NowMs());
  if (!v.comment().empty()) out << ": " << v.comment();
  out << "\n";
  return out.str();
}

int Get(const Args& args) {
  cxxopts::Options opts("baton policy get",
                        "The scheduling policy in force (classes, tenants, quotas, pools) as "
                        "YAML, headed by its version; `set` takes the same YAML back.");
  return RunOneCall(opts, args, "policy get", [](Client& client, const cxxopts::ParseResult& r) {
    v1::PolicyVersion resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->GetPolicy(ctx.get(), v1::GetPolicyRequest(), &resp);
    if (!s.ok()) return s;
    if (r.count("json")) {
      std::cout << ToJson(resp) << "\n";
    } else {
      std::cout << VersionLine(resp) << resp.yaml();
      if (!resp.yaml().empty() && resp.yaml().back() != '\n') std::cout << "\n";
    }
    return s;
  });
}

int Set(const Args& args) {
  cxxopts::Options opts("baton policy set",
                        "Replace the scheduling policy (admins). The file is checked whole "
                        "by the coordinator; an accepted one is stored as the next version "
                        "and applies from the next scheduling pass.");
  opts.add_options()("file", "policy YAML ('-' for stdin)",
                     cxxopts::value<std::vector<std::string>>())(
      "m,comment", "why (kept with the version)", cxxopts::value<std::string>()->default_value(""))(
      "dry-run", "check only; store and apply nothing");
  opts.parse_positional({"file"});
  opts.positional_help("FILE");
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  if (!r->count("file") || (*r)["file"].as<std::vector<std::string>>().size() != 1) {
    std::cerr << "baton policy set: give exactly one policy file (or '-')\n";
    return kUsage;
  }
  std::string path = (*r)["file"].as<std::vector<std::string>>().front();
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) {
      std::cerr << "baton policy set: cannot read " << path << "\n";
      return kUsage;
    }
    text << in.rdbuf();
  }
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  v1::SetPolicyRequest req;
  req.set_yaml(text.str());
  req.set_comment((*r)["comment"].as<std::string>());
  req.set_dry_run(r->count("dry-run") > 0);
  v1::PolicyVersion resp;
  auto ctx = client.Context();
  grpc::Status s = client.stub()->SetPolicy(ctx.get(), req, &resp);
  if (!s.ok()) return ReportError("policy set", s, conn->coordinator);
  if (r->count("json")) {
    std::cout << ToJson(resp) << "\n";
  } else if (req.dry_run()) {
    std::cout << path << " checks; it would be policy version " << resp.version() << "\n";
  } else {
    std::cout << "Policy version " << resp.version() << " in force (set by " << resp.author()
              << ")\n";
  }
  return kOk;
}

}  // namespace

int RunShare(const Args& args) {
  cxxopts::Options opts("baton share",
                        "Every tenant's fair-share standing: decayed GPU usage against its "
                        "weight (inside a class, the tenant furthest below its share goes "
                        "first), what it runs and waits for, its quota.");
  AddOutputFlags(opts);
  return RunOneCall(opts, args, "share", [](Client& client, const cxxopts::ParseResult& r) {
    v1::SharesResponse resp;
    auto ctx = client.Context();
    grpc::Status s = client.stub()->Shares(ctx.get(), v1::SharesRequest(), &resp);
    if (!s.ok()) return s;
    std::cout << Render(SharesListing(resp), Output(r));
    return s;
  });
}

int RunPolicy(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: baton policy get [--json]\n"
                 "       baton policy set FILE [-m COMMENT] [--dry-run] [--json]   (admins)\n";
    return args.empty() ? kUsage : kOk;
  }
  Args rest(args.begin() + 1, args.end());
  if (args[0] == "get") return Get(rest);
  if (args[0] == "set") return Set(rest);
  std::cerr << "baton policy: unknown subcommand '" << args[0] << "' (get or set)\n";
  return kUsage;
}

}  // namespace baton::cli
