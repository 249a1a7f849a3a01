#include "checkpoint/manifest.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "checkpoint/hash.h"
#include "common/status.h"

namespace baton::checkpoint {

namespace {

constexpr char kMagic[] = "baton-checkpoint";

// Percent-encodes every byte outside '!'..'~' and '%' itself, so keys and values are one
// space-free token each.
std::string Escape(const std::string& in) {
  std::string out;
  for (unsigned char c : in) {
    if (c > ' ' && c <= '~' && c != '%') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

bool ParseHexDigits(const std::string& text, size_t pos, size_t n, uint64_t* out) {
  if (pos + n > text.size()) return false;
  const char* begin = text.data() + pos;
  auto [end, ec] = std::from_chars(begin, begin + n, *out, 16);
  return ec == std::errc() && end == begin + n;
}

bool Unescape(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    uint64_t byte = 0;
    if (!ParseHexDigits(in, i + 1, 2, &byte)) return false;
    *out += static_cast<char>(byte);
    i += 2;
  }
  return true;
}

bool ParseInt64(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

std::vector<std::string> SplitSpaces(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t space = line.find(' ', start);
    fields.push_back(line.substr(start, space - start));
    if (space == std::string::npos) return fields;
    start = space + 1;
  }
}

// Fields of the body, with what has been seen so far.
struct ParseState {
  Manifest manifest;
  std::map<int64_t, ShardInfo> shards;
  std::map<std::string, bool> seen;
};

absl::Status LineError(int line_no, const std::string& what) {
  return absl::DataLossError("manifest line " + std::to_string(line_no) + ": " + what);
}

absl::Status ParseNumberLine(const std::vector<std::string>& f, int line_no, ParseState* s) {
  int64_t value = 0;
  if (f.size() != 2 || !ParseInt64(f[1], &value)) {
    return LineError(line_no, "expected '" + f[0] + " <non-negative integer>'");
  }
  if (s->seen[f[0]]) return LineError(line_no, "'" + f[0] + "' appears twice");
  s->seen[f[0]] = true;
  if (f[0] == "step") s->manifest.step = value;
  if (f[0] == "attempt") s->manifest.attempt = value;
  if (f[0] == "time_ms") s->manifest.time_ms = value;
  if (f[0] == "world_size") {
    if (value < 1 || value > (1 << 20)) return LineError(line_no, "world_size out of range");
    s->manifest.world_size = static_cast<int>(value);
  }
  return absl::OkStatus();
}

absl::Status ParseShardLine(const std::vector<std::string>& f, int line_no, ParseState* s) {
  int64_t rank = 0, size = 0;
  uint64_t hash = 0;
  if (f.size() != 4 || !ParseInt64(f[1], &rank) || !ParseInt64(f[2], &size) || f[3].size() != 16 ||
      !ParseHexDigits(f[3], 0, 16, &hash)) {
    return LineError(line_no, "expected 'shard <rank> <bytes> <16 hex digits>'");
  }
  if (!s->shards.emplace(rank, ShardInfo{static_cast<uint64_t>(size), hash}).second) {
    return LineError(line_no, "shard " + f[1] + " appears twice");
  }
  return absl::OkStatus();
}

absl::Status ParseMetaLine(const std::vector<std::string>& f, int line_no, ParseState* s) {
  std::string key, value;
  if (f.size() != 3 || f[1].empty() || !Unescape(f[1], &key) || !Unescape(f[2], &value)) {
    return LineError(line_no, "expected 'meta <escaped key> <escaped value>'");
  }
  if (!s->manifest.metadata.emplace(key, value).second) {
    return LineError(line_no, "metadata key '" + f[1] + "' appears twice");
  }
  return absl::OkStatus();
}

absl::Status ParseBodyLine(const std::string& line, int line_no, ParseState* s) {
  const std::vector<std::string> f = SplitSpaces(line);
  if (f[0] == "step" || f[0] == "attempt" || f[0] == "world_size" || f[0] == "time_ms") {
    return ParseNumberLine(f, line_no, s);
  }
  if (f[0] == "shard") return ParseShardLine(f, line_no, s);
  if (f[0] == "meta") return ParseMetaLine(f, line_no, s);
  return LineError(line_no, "unknown key '" + f[0].substr(0, 40) + "'");
}

absl::Status CheckTrailer(const std::string& text, size_t* body_end) {
  if (text.empty() || text.back() != '\n') {
    return absl::DataLossError("manifest is truncated: it does not end with a newline");
  }
  const size_t last_nl = text.rfind('\n', text.size() - 2);
  *body_end = last_nl == std::string::npos ? 0 : last_nl + 1;
  const std::string trailer = text.substr(*body_end, text.size() - 1 - *body_end);
  uint64_t expected = 0;
  if (trailer.size() != 21 || trailer.compare(0, 5, "xxh3 ") != 0 ||
      !ParseHexDigits(trailer, 5, 16, &expected)) {
    return absl::DataLossError("manifest is truncated: its last line is not 'xxh3 <checksum>'");
  }
  const uint64_t actual = Xxh3(text.data(), *body_end);
  if (actual != expected) {
    return absl::DataLossError("manifest checksum mismatch: recorded " + HexU64(expected) +
                               ", contents hash to " + HexU64(actual));
  }
  return absl::OkStatus();
}

absl::Status CheckVersionLine(const std::string& line, Manifest* m) {
  const std::vector<std::string> f = SplitSpaces(line);
  int64_t version = 0;
  if (f.size() != 2 || f[0] != kMagic || !ParseInt64(f[1], &version) || version < 1) {
    return absl::DataLossError("not a baton checkpoint manifest: line 1 is not '" +
                               std::string(kMagic) + " <version>'");
  }
  if (version > kFormatVersion) {
    return absl::FailedPreconditionError(
        "manifest format version " + f[1] + " is newer than this library reads (" +
        std::to_string(kFormatVersion) + "); restore with a newer libbaton_checkpoint");
  }
  m->format_version = static_cast<int>(version);
  return absl::OkStatus();
}

absl::Status CheckComplete(ParseState* s) {
  for (const char* key : {"step", "attempt", "world_size", "time_ms"}) {
    if (!s->seen[key]) return absl::DataLossError(std::string("manifest has no '") + key + "'");
  }
  Manifest& m = s->manifest;
  for (int r = 0; r < m.world_size; ++r) {
    auto it = s->shards.find(r);
    if (it == s->shards.end()) {
      return absl::DataLossError("manifest has no entry for shard " + std::to_string(r) +
                                 " of world size " + std::to_string(m.world_size));
    }
    m.shards.push_back(it->second);
  }
  if (s->shards.size() != m.shards.size()) {
    return absl::DataLossError("manifest lists shards beyond world size " +
                               std::to_string(m.world_size));
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeManifest(const Manifest& m) {
  std::string out = std::string(kMagic) + " " + std::to_string(m.format_version) + "\n";
  out += "step " + std::to_string(m.step) + "\n";
  out += "attempt " + std::to_string(m.attempt) + "\n";
  out += "world_size " + std::to_string(m.world_size) + "\n";
  out += "time_ms " + std::to_string(m.time_ms) + "\n";
  for (size_t r = 0; r < m.shards.size(); ++r) {
    out += "shard " + std::to_string(r) + " " + std::to_string(m.shards[r].size) + " " +
           HexU64(m.shards[r].xxh3) + "\n";
  }
  for (const auto& [key, value] : m.metadata) {
    out += "meta " + Escape(key) + " " + Escape(value) + "\n";
  }
  out += "xxh3 " + HexU64(Xxh3(out.data(), out.size())) + "\n";
  return out;
}

absl::StatusOr<Manifest> ParseManifest(const std::string& text) {
  if (text.size() > kMaxManifestBytes) {
    return absl::DataLossError("manifest has " + std::to_string(text.size()) +
                               " bytes, more than the " + std::to_string(kMaxManifestBytes) +
                               " allowed");
  }
  size_t body_end = 0;
  BATON_RETURN_IF_ERROR(CheckTrailer(text, &body_end));
  ParseState state;
  size_t pos = 0;
  int line_no = 0;
  while (pos < body_end) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line_no == 1) {
      BATON_RETURN_IF_ERROR(CheckVersionLine(line, &state.manifest));
    } else {
      BATON_RETURN_IF_ERROR(ParseBodyLine(line, line_no, &state));
    }
  }
  if (line_no == 0) return absl::DataLossError("manifest is empty");
  BATON_RETURN_IF_ERROR(CheckComplete(&state));
  return std::move(state.manifest);
}

}  // namespace baton::checkpoint
