#include "launcher/agent/isolation/tc.h"

#include <cstdio>
#include <sstream>

namespace baton {
namespace {

std::string Mbit(uint64_t mbps) { return std::to_string(mbps) + "mbit"; }

}  // namespace

std::string HtbClassId(uint32_t minor) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "1:%x", minor);
  return buf;
}

uint64_t ParseTcRate(const std::string& text) {
  double value = 0;
  char unit[16] = {};
  if (std::sscanf(text.c_str(), "%lf%15s", &value, unit) < 1) return 0;
  std::string u = unit;
  double mult = 1;
  if (u == "Kbit") mult = 1e3;
  if (u == "Mbit") mult = 1e6;
  if (u == "Gbit") mult = 1e9;
  if (u == "Tbit") mult = 1e12;
  return static_cast<uint64_t>(value * mult);
}

std::map<uint32_t, HtbClassStats> ParseHtbClasses(const std::string& text) {
  std::map<uint32_t, HtbClassStats> out;
  std::istringstream in(text);
  std::string line;
  HtbClassStats* current = nullptr;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string first;
    w >> first;
    if (first == "class") {
      std::string kind, id, word;
      w >> kind >> id;
      unsigned major = 0, minor = 0;
      current = nullptr;
      if (kind != "htb" || std::sscanf(id.c_str(), "%x:%x", &major, &minor) != 2) continue;
      current = &out[minor];
      current->minor = minor;
      while (w >> word) {
        std::string value;
        if (word == "rate" && w >> value) current->rate_bits = ParseTcRate(value);
        if (word == "ceil" && w >> value) current->ceil_bits = ParseTcRate(value);
      }
    } else if (first == "Sent" && current) {
      unsigned long long bytes = 0, pkts = 0, dropped = 0, over = 0;
      if (std::sscanf(line.c_str(), " Sent %llu bytes %llu pkt (dropped %llu, overlimits %llu",
                      &bytes, &pkts, &dropped, &over) >= 2) {
        current->bytes = bytes;
        current->packets = pkts;
        current->dropped = dropped;
        current->overlimits = over;
      }
    }
  }
  return out;
}

absl::StatusOr<CommandOutput> Htb::Tc(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"tc"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runner_->Run(argv);
}

absl::Status Htb::TcOk(const std::vector<std::string>& args) {
  auto r = Tc(args);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) return absl::OkStatus();
  return absl::InternalError("tc " + JoinArgs(args) + ": " + r->err);
}

absl::StatusOr<Ensured> Htb::EnsureRoot(uint64_t rate_mbps, uint32_t default_minor) {
  auto shown = Tc({"qdisc", "show", "dev", dev_, "root"});
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0)
    return absl::NotFoundError("tc: no device " + dev_ + ": " + shown->err);
  bool there = shown->out.find("qdisc htb 1: root") != std::string::npos;
  if (!there) {
    char def[16];
    std::snprintf(def, sizeof def, "%x", default_minor);
    if (auto s = TcOk({"qdisc", "replace", "dev", dev_, "root", "handle", "1:", "htb", "default",
                       def, "r2q", "1000"});
        !s.ok()) {
      return s;
    }
  }
  auto classes = Classes();
  if (!classes.ok()) return classes.status();
  std::string verb = classes->count(1) ? "change" : "add";
  if (auto s = TcOk({"class", verb, "dev", dev_, "parent", "1:", "classid", "1:1", "htb", "rate",
                     Mbit(rate_mbps), "ceil", Mbit(rate_mbps)});
      !s.ok()) {
    return s;
  }
  return there ? Ensured::kAlreadyThere : Ensured::kCreated;
}

absl::StatusOr<Ensured> Htb::EnsureClass(uint32_t minor, uint64_t rate_mbps, uint64_t ceil_mbps) {
  auto classes = Classes();
  if (!classes.ok()) return classes.status();
  bool there = classes->count(minor) > 0;
  if (auto s = TcOk({"class", there ? "change" : "add", "dev", dev_, "parent", "1:1", "classid",
                     HtbClassId(minor), "htb", "rate", Mbit(rate_mbps), "ceil", Mbit(ceil_mbps)});
      !s.ok()) {
    return s;
  }
  return there ? Ensured::kAlreadyThere : Ensured::kCreated;
}

absl::Status Htb::DeleteClass(uint32_t minor) {
  auto classes = Classes();
  if (!classes.ok()) return classes.status();
  if (!classes->count(minor)) return absl::OkStatus();
  return TcOk({"class", "del", "dev", dev_, "classid", HtbClassId(minor)});
}

absl::Status Htb::DeleteRoot() {
  auto shown = Tc({"qdisc", "show", "dev", dev_, "root"});
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0 || shown->out.find("qdisc htb 1: root") == std::string::npos) {
    return absl::OkStatus();
  }
  return TcOk({"qdisc", "del", "dev", dev_, "root"});
}

absl::StatusOr<std::map<uint32_t, HtbClassStats>> Htb::Classes() {
  auto r = Tc({"-s", "class", "show", "dev", dev_});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError("tc class show dev " + dev_ + ": " + r->err);
  return ParseHtbClasses(r->out);
}

}  // namespace baton
