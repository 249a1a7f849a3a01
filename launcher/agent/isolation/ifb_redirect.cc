#include "launcher/agent/isolation/ifb_redirect.h"

#include <charconv>
#include <cstdio>

#include "nlohmann/json.hpp"

namespace baton {
namespace {

// Classic BPF: ld the skb mark (SKF_AD_OFF + SKF_AD_MARK), jset the mark bits, ret.
constexpr uint32_t kLdMark = 0x20, kJset = 0x45, kRet = 0x06;
constexpr uint32_t kSkfAdMark = 0xfffff000u + 20;

}  // namespace

std::string IfbNameFor(const std::string& nic) {
  if (nic.size() <= 11) return "ifb-" + nic;
  uint32_t h = 2166136261u;
  for (unsigned char c : nic) h = (h ^ c) * 16777619u;
  char buf[16];
  std::snprintf(buf, sizeof buf, "ifb-%.3s%08x", nic.c_str(), h);
  return buf;
}

absl::StatusOr<uint32_t> ParseCapMark(std::string_view text) {
  bool hex = text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0;
  std::string_view digits = text.substr(hex ? 2 : 0);
  uint32_t mark = 0;
  auto [end, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), mark, hex ? 16 : 10);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || mark == 0) {
    return absl::InvalidArgumentError("'" + std::string(text) + "' is not a nonzero 32-bit number");
  }
  return mark;
}

std::string MarkFilterBytecode(uint32_t mark) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "4,%u 0 0 %u,%u 0 1 %u,%u 0 0 4294967295,%u 0 0 0", kLdMark,
                kSkfAdMark, kJset, mark, kRet, kRet);
  return buf;
}

absl::Status IfbRedirect::RunOk(const std::vector<std::string>& argv) {
  auto r = runner_->Run(argv);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0) return absl::OkStatus();
  return absl::InternalError(JoinArgs(argv) + ": " + r->err);
}

absl::StatusOr<bool> IfbRedirect::HasClsact() {
  auto shown = runner_->Run({"tc", "-j", "qdisc", "show", "dev", nic_});
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0) {
    return absl::NotFoundError("tc: no device " + nic_ + ": " + shown->err);
  }
  auto qdiscs = nlohmann::json::parse(shown->out, nullptr, /*allow_exceptions=*/false);
  if (qdiscs.is_discarded() || !qdiscs.is_array()) {
    return absl::InvalidArgumentError("tc -j qdisc show dev " + nic_ + ": not a JSON array: '" +
                                      shown->out + "'");
  }
  for (const auto& q : qdiscs) {
    if (q.is_object() && q.value("kind", "") == "clsact") return true;
  }
  return false;
}

absl::StatusOr<Ensured> IfbRedirect::Ensure(uint32_t return_minor) {
  bool created = false;
  auto link = runner_->Run({"ip", "link", "show", "dev", ifb_});
  if (!link.ok()) return link.status();
  if (link->exit_code != 0) {
    auto added = runner_->Run({"ip", "link", "add", ifb_, "type", "ifb"});
    if (!added.ok()) return added.status();
    if (added->exit_code != 0) {
      return absl::FailedPreconditionError(
          "cannot create the IFB device " + ifb_ +
          " for network caps (is the ifb module there?): " + added->err);
    }
    created = true;
  }
  if (auto s = RunOk({"ip", "link", "set", "dev", ifb_, "up"}); !s.ok()) return s;
  auto clsact = HasClsact();
  if (!clsact.ok()) return clsact.status();
  if (!*clsact) {
    if (auto s = RunOk({"tc", "qdisc", "add", "dev", nic_, "clsact"}); !s.ok()) return s;
    created = true;
  }
  std::string code = MarkFilterBytecode(mark_);
  auto redirect = EnsureFilter(
      "egress", {"bytecode '" + code + "'", "Redirect to device " + ifb_ + ")"},
      {"bpf", "bytecode", code, "action", "mirred", "egress", "redirect", "dev", ifb_});
  if (!redirect.ok()) return redirect.status();
  auto back = EnsureFilter("1:", {"bytecode '" + code + "'", "flowid " + HtbClassId(return_minor)},
                           {"bpf", "bytecode", code, "classid", HtbClassId(return_minor)});
  if (!back.ok()) return back.status();
  return created || *redirect || *back ? Ensured::kCreated : Ensured::kAlreadyThere;
}

std::vector<std::string> IfbRedirect::Filter(const std::string& verb,
                                             const std::string& parent) const {
  std::vector<std::string> argv = {"tc", "filter", verb, "dev", nic_};
  if (parent == "egress") {
    argv.push_back("egress");
  } else {
    argv.insert(argv.end(), {"parent", parent});
  }
  argv.insert(argv.end(), {"pref", std::to_string(kFilterPref)});
  return argv;
}

absl::StatusOr<bool> IfbRedirect::DeleteFilter(const std::string& parent) {
  auto shown = runner_->Run(Filter("show", parent));
  if (!shown.ok()) return shown.status();
  if (shown->exit_code != 0 || shown->out.empty()) return false;
  if (auto s = RunOk(Filter("del", parent)); !s.ok()) return s;
  return true;
}

absl::StatusOr<bool> IfbRedirect::EnsureFilter(const std::string& parent,
                                               const std::vector<std::string>& want,
                                               const std::vector<std::string>& add) {
  auto shown = runner_->Run(Filter("show", parent));
  if (!shown.ok()) return shown.status();
  bool ours = shown->exit_code == 0;
  for (const auto& w : want) ours = ours && shown->out.find(w) != std::string::npos;
  if (ours) return false;
  if (shown->exit_code == 0 && !shown->out.empty()) {
    if (auto st = RunOk(Filter("del", parent)); !st.ok()) return st;
  }
  std::vector<std::string> argv = Filter("add", parent);
  argv.insert(argv.end(), add.begin(), add.end());
  if (auto s = RunOk(argv); !s.ok()) return s;
  return true;
}

absl::Status IfbRedirect::Remove() {
  // The root filter goes with the HTB root too, but an agent may remove caps and keep it.
  if (auto gone = DeleteFilter("1:"); !gone.ok()) return gone.status();
  auto clsact = HasClsact();
  if (!clsact.ok() && clsact.status().code() != absl::StatusCode::kNotFound) {
    return clsact.status();
  }
  if (clsact.ok() && *clsact) {
    if (auto gone = DeleteFilter("egress"); !gone.ok()) return gone.status();
    bool others = false;
    for (const char* hook : {"egress", "ingress"}) {
      auto left = runner_->Run({"tc", "filter", "show", "dev", nic_, hook});
      if (!left.ok()) return left.status();
      others = others || left->exit_code != 0 || !left->out.empty();
    }
    if (!others) {
      if (auto s = RunOk({"tc", "qdisc", "del", "dev", nic_, "clsact"}); !s.ok()) return s;
    }
  }
  auto link = runner_->Run({"ip", "link", "show", "dev", ifb_});
  if (!link.ok()) return link.status();
  if (link->exit_code != 0) return absl::OkStatus();
  return RunOk({"ip", "link", "del", "dev", ifb_});
}

}  // namespace baton
