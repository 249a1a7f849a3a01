// The capped classes' own device: an IFB that the NIC's egress traffic with the cap mark
// is redirected to, so their HTB classes sit on a qdisc that no other traffic touches
// (docs/isolation.md "Network caps"). A clsact egress filter on the NIC (classic BPF: the
// skb mark has a bit of `mark`) redirects such packets to the IFB, whose root qdisc holds
// the caps; the IFB then sends them out through the NIC, past the filter, where a filter
// on the NIC's HTB root puts them in one class of their own (the "return class").
// Why a device of their own: an HTB class held at its ceiling arms its qdisc's watchdog
// timer on the CPU that dequeued last, and that CPU's NET_TX softirq then dequeues the
// capped flow (on a veth it also receives it). Under one root shared with inference
// traffic that CPU is, as often as not, an inference job's: its sends run the qdisc. On
// the IFB only capped traffic arrives, so the timers and dequeues stay on the CPUs that
// send it. Thread-compatible (NetCaps serialises).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/command.h"
#include "launcher/agent/isolation/tc.h"

namespace baton {

class IfbRedirect {
 public:
  // The filter's preference on the NIC's egress hook: the agent's, among others' filters.
  static constexpr int kFilterPref = 2983;

  IfbRedirect(CommandRunner* runner, std::string nic, std::string ifb, uint32_t mark)
      : runner_(runner), nic_(std::move(nic)), ifb_(std::move(ifb)), mark_(mark) {}

  // The IFB (created, set up), the NIC's clsact qdisc, the redirect filter, and on the
  // NIC's HTB root 1: (there already) the filter to class 1:`return_minor`. A filter at
  // kFilterPref that is not this one (another mark, device or class) is replaced.
  absl::StatusOr<Ensured> Ensure(uint32_t return_minor);
  // The filters, the clsact qdisc when no filter is left on it, then the IFB. OK when
  // none of them is there.
  absl::Status Remove();
  const std::string& ifb() const { return ifb_; }

 private:
  absl::Status RunOk(const std::vector<std::string>& argv);
  absl::StatusOr<bool> HasClsact();
  // `tc filter VERB dev NIC {egress | parent P} pref kFilterPref`.
  std::vector<std::string> Filter(const std::string& verb, const std::string& parent) const;
  // The filter at kFilterPref of `parent` ("egress" or a qdisc's handle) removed: true when
  // there was one.
  absl::StatusOr<bool> DeleteFilter(const std::string& parent);
  // `parent`'s filter at kFilterPref shows every string of `want`, else it is replaced by
  // `add`: true when it was.
  absl::StatusOr<bool> EnsureFilter(const std::string& parent, const std::vector<std::string>& want,
                                    const std::vector<std::string>& add);

  CommandRunner* const runner_;
  const std::string nic_;
  const std::string ifb_;
  const uint32_t mark_;
};

// The IFB of `nic`: "ifb-<nic>" while that fits a device name (15 characters), else
// "ifb-" with the name's first 3 characters and 8 hex digits of its FNV-1a hash.
std::string IfbNameFor(const std::string& nic);
// --net-cap-mark: "0x00800000" or "8388608" -> the mark bits; InvalidArgument naming the
// text for anything but a nonzero 32-bit number.
absl::StatusOr<uint32_t> ParseCapMark(std::string_view text);
// tc's classic BPF bytecode for "the skb mark has a bit of `mark`": match (-1) or not (0).
std::string MarkFilterBytecode(uint32_t mark);

}  // namespace baton
