#include "launcher/agent/isolation/tc.h"

#include <charconv>
#include <cstdio>
#include <sstream>
#include <vector>

#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace baton {
namespace {

std::string Mbit(uint64_t mbps) { return std::to_string(mbps) + "mbit"; }

template <typename T>
bool ParseNumber(std::string_view s, T* out, int base = 10) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// "class htb 1:a0 parent 1:1 prio 0 rate 70Mbit ceil 700Mbit burst 1583b cburst 1487b"
absl::StatusOr<HtbClassStats> ParseClassLine(const std::string& line,
                                             const std::vector<std::string>& w) {
  HtbClassStats c;
  uint32_t major = 0;
  if (!ParseClassId(w[2], &major, &c.minor)) {
    return absl::InvalidArgumentError("tc class line '" + line + "': malformed class id");
  }
  bool rate = false, ceil = false;
  for (size_t i = 3; i + 1 < w.size(); ++i) {
    if (w[i] != "rate" && w[i] != "ceil") continue;
    auto bits = ParseTcRate(w[i + 1]);
    if (!bits.ok()) {
      return absl::InvalidArgumentError("tc class line '" + line +
                                        "': " + std::string(bits.status().message()));
    }
    (w[i] == "rate" ? c.rate_bits : c.ceil_bits) = *bits;
    (w[i] == "rate" ? rate : ceil) = true;
  }
  if (!rate || !ceil) {
    return absl::InvalidArgumentError("tc class line '" + line + "': no " +
                                      (rate ? "ceil" : "rate"));
  }
  return c;
}

// " Sent 6581589 bytes 4388 pkt (dropped 7, overlimits 101 requeues 0)"
absl::Status ParseSentLine(const std::string& line, const std::vector<std::string>& w,
                           HtbClassStats* c) {
  bool ok = w.size() >= 9 && w[2] == "bytes" && w[4] == "pkt" && w[5] == "(dropped" &&
            w[7] == "overlimits" && !w[6].empty() && w[6].back() == ',' &&
            ParseNumber(w[1], &c->bytes) && ParseNumber(w[3], &c->packets) &&
            ParseNumber(std::string_view(w[6]).substr(0, w[6].size() - 1), &c->dropped) &&
            ParseNumber(w[8], &c->overlimits);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError("tc class " + HtbClassId(c->minor) + ": malformed counters '" +
                                    line + "'");
}

absl::Status NoCounters(const HtbClassStats& c) {
  return absl::InvalidArgumentError("tc class " + HtbClassId(c.minor) +
                                    ": no 'Sent' counters (not `tc -s` output?)");
}

// `tc -j qdisc show dev D root`: [{"kind":"htb","handle":"1:","root":true,...}] ([] for a
// device without one). Whether baton's HTB root 1: is there.
absl::StatusOr<bool> HasHtbRoot(const std::string& json) {
  auto qdiscs = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (qdiscs.is_discarded() || !qdiscs.is_array()) {
    return absl::InvalidArgumentError("tc -j qdisc show: not a JSON array: '" + json + "'");
  }
  for (const auto& q : qdiscs) {
    for (const char* key : {"kind", "handle"}) {
      if (!q.is_object() || !q.contains(key) || !q[key].is_string()) {
        return absl::InvalidArgumentError(std::string("tc -j qdisc show: a qdisc without '") + key +
                                          "': " + q.dump());
      }
    }
    bool root = q.contains("root") && q["root"].is_boolean() && q["root"].get<bool>();
    if (root && q["kind"] == "htb" && q["handle"] == "1:") return true;
  }
  return false;
}

}  // namespace

std::string HtbClassId(uint32_t minor) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "1:%x", minor);
  return buf;
}

bool ParseClassId(std::string_view id, uint32_t* major, uint32_t* minor) {
  size_t colon = id.find(':');
  return colon != std::string_view::npos && ParseNumber(id.substr(0, colon), major, 16) &&
         ParseNumber(id.substr(colon + 1), minor, 16);
}

absl::StatusOr<uint64_t> ParseTcRate(std::string_view text) {
  static const std::map<std::string_view, double, std::less<>> kUnits = {
      {"bit", 1}, {"Kbit", 1e3}, {"Mbit", 1e6}, {"Gbit", 1e9}, {"Tbit", 1e12}};
  size_t unit = text.find_first_not_of("0123456789.");
  auto mult = unit == std::string_view::npos ? kUnits.end() : kUnits.find(text.substr(unit));
  double value = 0;
  if (mult == kUnits.end() || unit == 0 ||
      std::from_chars(text.data(), text.data() + unit, value).ptr != text.data() + unit) {
    return absl::InvalidArgumentError("malformed tc rate '" + std::string(text) + "'");
  }
  return static_cast<uint64_t>(value * mult->second);
}

absl::StatusOr<std::map<uint32_t, HtbClassStats>> ParseHtbClasses(const std::string& text) {
  std::map<uint32_t, HtbClassStats> out;
  std::istringstream in(text);
  std::string line;
  HtbClassStats* current = nullptr;  // the HTB class whose counters come next
  while (std::getline(in, line)) {
    std::vector<std::string> w = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!w.empty() && w[0] == "class") {
      if (current != nullptr) return NoCounters(*current);
      if (w.size() < 3 || w[1] != "htb") continue;  // another qdisc's class
      auto cls = ParseClassLine(line, w);
      if (!cls.ok()) return cls.status();
      current = &(out[cls->minor] = *cls);
    } else if (!w.empty() && w[0] == "Sent" && current != nullptr) {
      if (auto s = ParseSentLine(line, w, current); !s.ok()) return s;
      current = nullptr;
    }
  }
  if (current != nullptr) return NoCounters(*current);
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
  auto shown = Tc({"-j", "qdisc", "show", "dev", dev_, "root"});
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0)
    return absl::NotFoundError("tc: no device " + dev_ + ": " + shown->err);
  auto there = HasHtbRoot(shown->out);
  if (!there.ok()) return there.status();
  if (!*there) {
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
  return *there ? Ensured::kAlreadyThere : Ensured::kCreated;
}

absl::StatusOr<Ensured> Htb::EnsureClass(uint32_t minor, uint64_t rate_mbps, uint64_t ceil_mbps,
                                         uint32_t prio) {
  auto classes = Classes();
  if (!classes.ok()) return classes.status();
  bool there = classes->count(minor) > 0;
  if (auto s = TcOk({"class", there ? "change" : "add", "dev", dev_, "parent", "1:1", "classid",
                     HtbClassId(minor), "htb", "rate", Mbit(rate_mbps), "ceil", Mbit(ceil_mbps),
                     "prio", std::to_string(prio)});
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
  auto shown = Tc({"-j", "qdisc", "show", "dev", dev_, "root"});
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0) return absl::OkStatus();  // no device: no root
  auto there = HasHtbRoot(shown->out);
  if (!there.ok()) return there.status();
  if (!*there) return absl::OkStatus();
  return TcOk({"qdisc", "del", "dev", dev_, "root"});
}

absl::StatusOr<std::map<uint32_t, HtbClassStats>> Htb::Classes() {
  auto r = Tc({"-s", "class", "show", "dev", dev_});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return absl::InternalError("tc class show dev " + dev_ + ": " + r->err);
  auto classes = ParseHtbClasses(r->out);
  if (!classes.ok()) {
    return absl::InternalError("tc -s class show dev " + dev_ + ": " +
                               std::string(classes.status().message()));
  }
  return classes;
}

}  // namespace baton
