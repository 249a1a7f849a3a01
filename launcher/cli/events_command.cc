// baton events [--job J] [--follow]: the coordinator's event log — transitions,
// scheduling decisions, evictions, refused specs, policy changes, node changes.
#include <iostream>

#include "common/ids.h"
#include "launcher/cli/commands.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"

namespace baton::cli {

int RunEvents(const Args& args) {
  cxxopts::Options opts("baton events",
                        "The event log, oldest first: job transitions, scheduling decisions, "
                        "evictions, refused specs, policy changes (who changed what) and node "
                        "changes.");
  opts.add_options()("job", "only this job's events", cxxopts::value<std::string>())(
      "f,follow", "keep printing new events as they happen")(
      "kind",
      "only events of this kind (repeatable): transition, scheduling, eviction, "
      "quota_refusal, policy, node",
      cxxopts::value<std::vector<std::string>>())("tail", "only the last N events of the history",
                                                  cxxopts::value<uint32_t>()->default_value("0"))(
      "since", "only events after this sequence number",
      cxxopts::value<uint64_t>()->default_value("0"));
  AddCommonFlags(opts);
  AddOutputFlags(opts);
  int code = kOk;
  auto r = Parse(opts, args, &code);
  if (!r) return code;
  v1::EventsRequest req;
  if (r->count("job")) {
    auto id = ParseJobId((*r)["job"].as<std::string>());
    if (!id.ok()) {
      std::cerr << "baton events: --job: " << id.status().message() << "\n";
      return kUsage;
    }
    req.set_job_id(*id);
  }
  if (r->count("kind")) {
    for (const auto& name : (*r)["kind"].as<std::vector<std::string>>()) {
      auto kind = ParseEventKindName(name);
      if (!kind.ok()) {
        std::cerr << "baton events: --kind: " << kind.status().message() << "\n";
        return kUsage;
      }
      req.add_kinds(*kind);
    }
  }
  req.set_follow(r->count("follow"));
  req.set_tail((*r)["tail"].as<uint32_t>());
  req.set_after_seq((*r)["since"].as<uint64_t>());
  auto conn = Connection(*r, &code);
  if (!conn) return code;
  Client client(*conn);
  // No deadline: a long history or a follow may take any time.
  auto ctx = client.Context(/*streaming=*/true);
  auto reader = client.stub()->Events(ctx.get(), req);
  OutputOptions output = Output(*r);
  v1::Event ev;
  while (reader->Read(&ev)) {
    std::cout << RenderEvent(ev, output);
    std::cout.flush();
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return ReportError("events", s, conn->coordinator);
  return kOk;
}

}  // namespace baton::cli
