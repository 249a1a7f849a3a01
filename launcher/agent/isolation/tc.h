// Idempotent wrapper over `tc` for one NIC's HTB tree: root qdisc 1: with class 1:1 at
// the NIC's rate, classes 1:<minor> under it, and their byte counters. Every Ensure*
// reports whether it created the object or found it already there (and then updates its
// rates). Used by NetCaps; thread-compatible (NetCaps serialises).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "launcher/agent/isolation/command.h"

namespace baton {

enum class Ensured { kCreated, kAlreadyThere };

struct HtbClassStats {
  uint32_t minor = 0;
  uint64_t rate_bits = 0;  // configured rate, bits/s
  uint64_t ceil_bits = 0;
  uint64_t bytes = 0;  // sent through the class
  uint64_t packets = 0;
  uint64_t dropped = 0;     // packets dropped in the class
  uint64_t overlimits = 0;  // packets held back at the rate or ceiling
};

class Htb {
 public:
  Htb(CommandRunner* runner, std::string dev) : runner_(runner), dev_(std::move(dev)) {}

  // Root qdisc `1: htb default <default_minor>` and class 1:1 at `rate_mbps`. A root
  // qdisc of another kind is replaced.
  absl::StatusOr<Ensured> EnsureRoot(uint64_t rate_mbps, uint32_t default_minor);
  // Class 1:<minor> under 1:1; an existing one gets the given rate, ceiling and HTB
  // priority (0 first: a lower value is offered spare bandwidth, and dequeued, first).
  absl::StatusOr<Ensured> EnsureClass(uint32_t minor, uint64_t rate_mbps, uint64_t ceil_mbps,
                                      uint32_t prio);
  absl::Status DeleteClass(uint32_t minor);  // OK when it is not there
  absl::Status DeleteRoot();                 // OK when it is not there
  absl::StatusOr<std::map<uint32_t, HtbClassStats>> Classes();
  const std::string& dev() const { return dev_; }

 private:
  absl::StatusOr<CommandOutput> Tc(const std::vector<std::string>& args);
  absl::Status TcOk(const std::vector<std::string>& args);

  CommandRunner* const runner_;
  const std::string dev_;
};

// `tc -s class show` text -> HTB classes by minor id (other qdiscs' classes are skipped).
// Text because iproute2 6.1 (Debian 12) prints classes as text even with -j; only its
// qdisc listing has JSON. InvalidArgument naming the line when a class has a malformed
// id, rate or counters, or no counters at all.
absl::StatusOr<std::map<uint32_t, HtbClassStats>> ParseHtbClasses(const std::string& text);
// "700Mbit" / "1Gbit" / "64Kbit" / "800bit" -> bits per second; InvalidArgument naming
// anything else.
absl::StatusOr<uint64_t> ParseTcRate(std::string_view text);
// "1:a0" -> 1 and 0xa0 (tc writes ids in hex); false when malformed.
bool ParseClassId(std::string_view id, uint32_t* major, uint32_t* minor);
// 0x1a0 -> "1:1a0" (tc writes minor ids in hex).
std::string HtbClassId(uint32_t minor);

}  // namespace baton
