#include "common/resources.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace baton {
namespace {

std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out.append(p);
  return out;
}

// Splits "1.5Gi" into 1.5 and "Gi"; the number must be a finite non-negative decimal.
absl::StatusOr<std::pair<double, std::string>> SplitQuantity(std::string_view text,
                                                             std::string_view what) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  double value = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + i, value);
  if (i == 0 || ec != std::errc() || end != t.data() + i || !std::isfinite(value)) {
    return absl::InvalidArgumentError("invalid " + std::string(what) + " '" + std::string(text) +
                                      "': expected a non-negative number");
  }
  std::string unit(t.substr(i));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::make_pair(value, unit);
}

absl::StatusOr<uint64_t> Scale(double value, double factor, std::string_view text,
                               std::string_view what, double max) {
  double v = value * factor;
  if (v > max) return absl::InvalidArgumentError(Cat({what, " '", text, "' is too large"}));
  return static_cast<uint64_t>(std::llround(v));
}

}  // namespace

Resources& Resources::operator+=(const Resources& o) {
  cpu_millis += o.cpu_millis;
  memory_bytes += o.memory_bytes;
  gpus += o.gpus;
  return *this;
}

Resources& Resources::operator-=(const Resources& o) {
  cpu_millis -= std::min(cpu_millis, o.cpu_millis);
  memory_bytes -= std::min(memory_bytes, o.memory_bytes);
  gpus -= std::min(gpus, o.gpus);
  return *this;
}

absl::StatusOr<uint64_t> ParseCpuMillis(std::string_view text) {
  auto q = SplitQuantity(text, "CPU quantity");
  if (!q.ok()) return q.status();
  auto [value, unit] = *q;
  if (unit.empty()) return Scale(value, 1000, text, "CPU quantity", 1e9);
  if (unit == "m") return Scale(value, 1, text, "CPU quantity", 1e9);
  return absl::InvalidArgumentError(
      Cat({"invalid CPU quantity '", text, "': use cores (2, 0.5) or millicores (500m)"}));
}

absl::StatusOr<uint64_t> ParseBytes(std::string_view text) {
  auto q = SplitQuantity(text, "size");
  if (!q.ok()) return q.status();
  auto [value, unit] = *q;
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "GiB" -> "gi"
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1},           {"k", 1e3},           {"m", 1e6},
      {"g", 1e9},        {"t", 1e12},          {"ki", 1024.0},
      {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return Scale(value, factor, text, "size", 9.2e18);
  }
  return absl::InvalidArgumentError(
      Cat({"invalid size '", text, "': use a number with K, M, G, T, Ki, Mi, Gi or Ti"}));
}

absl::StatusOr<absl::Duration> ParseDuration(std::string_view text) {
  std::string t(text);
  auto invalid = [&] {
    return absl::InvalidArgumentError(
        Cat({"invalid duration '", text, "': use e.g. 90s, 500ms, 15m, 1h30m, 2d"}));
  };
  if (t.empty()) return invalid();
  if (t.find_first_not_of("0123456789.") == std::string::npos) t += "s";  // seconds
  // Days first ("2d", "1d12h"), then absl's units for the rest.
  absl::Duration days;
  size_t d = t.find('d');
  if (d != std::string::npos) {
    double n = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + d, n);
    if (ec != std::errc() || end != t.data() + d || d == 0 || !(n >= 0) || n > 1e9) {
      return invalid();
    }
    days = absl::Hours(24) * n;
    t = t.substr(d + 1);
  }
  absl::Duration rest;
  if (!t.empty() && !absl::ParseDuration(t, &rest)) return invalid();
  absl::Duration total = days + rest;
  if (total < absl::ZeroDuration() || total == absl::InfiniteDuration()) return invalid();
  if (total > absl::Hours(24) * 365 * 1000) {
    return absl::InvalidArgumentError(Cat({"duration '", text, "' is out of range"}));
  }
  return total;
}

absl::StatusOr<uint64_t> ParseDurationSeconds(std::string_view text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return d.status();
  if (*d != absl::Seconds(absl::ToInt64Seconds(*d))) {
    return absl::InvalidArgumentError(
        Cat({"duration '", text, "' is not a whole number of seconds"}));
  }
  return static_cast<uint64_t>(absl::ToInt64Seconds(*d));
}

absl::StatusOr<uint64_t> ParseMbps(std::string_view text) {
  auto q = SplitQuantity(text, "rate");
  if (!q.ok()) return q.status();
  auto [value, unit] = *q;
  if (unit.empty() || unit == "mbit") return Scale(value, 1, text, "rate", 1e9);
  if (unit == "gbit") return Scale(value, 1000, text, "rate", 1e9);
  return absl::InvalidArgumentError(
      Cat({"invalid rate '", text, "': use mbit or gbit (100mbit, 1gbit)"}));
}

std::string FormatCpuMillis(uint64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return std::to_string(millis) + "m";
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr std::string_view kUnits[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes);
  if (v == std::floor(v)) return std::to_string(static_cast<uint64_t>(v)) + std::string(kUnits[u]);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf + std::string(kUnits[u]);
}

absl::Duration DoublingBackoff(absl::Duration base, absl::Duration cap, uint32_t n) {
  if (n == 0) return absl::ZeroDuration();
  absl::Duration d = base;
  for (uint32_t i = 1; i < n && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

int64_t DeadlineMs(int64_t now_ms, absl::Duration wait) {
  const int64_t room = std::numeric_limits<int64_t>::max() - now_ms;
  return wait >= absl::Milliseconds(room) ? std::numeric_limits<int64_t>::max()
                                          : now_ms + absl::ToInt64Milliseconds(wait);
}

std::string FormatDurationMs(int64_t ms) {
  if (ms < 0) ms = 0;
  int64_t s = ms / 1000;
  if (s < 60) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
    return buf;
  }
  // "<big><unit><small, two digits><unit>", as printf's "%lld%c%02lld%c" would make it,
  // without printf: the scheduler writes one for every job in cooldown at every pass.
  auto two_units = [](int64_t big, char big_unit, int64_t small, char small_unit) {
    char buf[32];
    char* end = std::to_chars(buf, buf + 20, big).ptr;
    *end++ = big_unit;
    *end++ = static_cast<char>('0' + small / 10);
    *end++ = static_cast<char>('0' + small % 10);
    *end++ = small_unit;
    return std::string(buf, end);
  };
  if (s < 3600) return two_units(s / 60, 'm', s % 60, 's');
  if (s < 86400) return two_units(s / 3600, 'h', (s % 3600) / 60, 'm');
  return two_units(s / 86400, 'd', (s % 86400) / 3600, 'h');
}

}  // namespace baton
