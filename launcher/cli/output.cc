#include "launcher/cli/output.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "launcher/cli/format.h"

namespace baton::cli {

absl::StatusOr<OutputOptions> ParseOutputOptions(const std::string* output, bool json,
                                                 bool no_headers) {
  OutputOptions o;
  if (output != nullptr) {
    const std::string& v = *output;
    if (v == "wide") {
      o.format = OutputFormat::kWide;
    } else if (v == "json") {
      o.format = OutputFormat::kJson;
    } else if (v == "yaml") {
      o.format = OutputFormat::kYaml;
    } else if (v == "name") {
      o.format = OutputFormat::kName;
    } else if (v == "csv") {
      o.format = OutputFormat::kCsv;
    } else {
      return absl::InvalidArgumentError("-o '" + v + "': unknown output format; use one of " +
                                        kOutputValues);
    }
    if (json && o.format != OutputFormat::kJson) {
      return absl::InvalidArgumentError("--json and -o " + v + " conflict (--json is -o json)");
    }
  } else if (json) {
    o.format = OutputFormat::kJson;
  }
  if (no_headers && o.format != OutputFormat::kTable && o.format != OutputFormat::kWide &&
      o.format != OutputFormat::kCsv) {
    std::string value = output != nullptr ? *output : "json";
    return absl::InvalidArgumentError(
        "--no-headers applies to tables (the default, -o wide and -o csv); -o " + value +
        " has no header row");
  }
  o.no_headers = no_headers;
  return o;
}

namespace {

using Json = nlohmann::ordered_json;

// Would a plain YAML scalar `s` be read as something other than this string?
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  for (const char* special : {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
                              ".inf", "-.inf", "+.inf", ".nan"}) {
    if (lower == special) return true;
  }
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size()) return true;  // a number: "17", "1e3", "0x1f", "inf"
  return false;
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
  out << s;
}

void Emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, value] : j.items()) {
        out << YAML::Key;
        EmitString(out, key);
        out << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& value : j) Emit(out, value);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string:
      EmitString(out, j.get<std::string>());
      return;
    case Json::value_t::null:
      out << YAML::Null;
      return;
    default:  // booleans and numbers: JSON's spelling is YAML's
      out << j.dump();
      return;
  }
}

std::string Cut(const std::string& s, size_t n) {
  return n == 0 || s.size() <= n ? s : s.substr(0, n - 1) + "…";
}

std::string RenderTable(const Listing& l, bool wide, bool no_headers) {
  std::vector<std::vector<std::string>> rows;
  auto pick = [&](const std::vector<std::string>& cells, bool cut) {
    std::vector<std::string> row;
    for (size_t i = 0; i < l.columns.size() && i < cells.size(); ++i) {
      if (l.columns[i].wide_only && !wide) continue;
      row.push_back(cut && !wide ? Cut(cells[i], l.columns[i].max_width) : cells[i]);
    }
    return row;
  };
  if (!no_headers) {
    std::vector<std::string> header;
    for (const auto& c : l.columns) header.push_back(c.header);
    rows.push_back(pick(header, /*cut=*/false));
  }
  for (const auto& cells : l.rows) rows.push_back(pick(cells, /*cut=*/true));
  return Table(rows) + (no_headers ? "" : l.footer);
}

// RFC 4180: a cell with a comma, quote or line break is quoted, its quotes doubled.
std::string CsvCell(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string RenderCsv(const Listing& l, bool no_headers) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < l.columns.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvCell(i < cells.size() ? cells[i] : "");
    }
    out += "\r\n";
  };
  if (!no_headers) {
    std::vector<std::string> header;
    for (const auto& c : l.columns) header.push_back(c.header);
    line(header);
  }
  for (const auto& cells : l.rows) line(cells);
  return out;
}

}  // namespace

std::string ToYaml(const google::protobuf::Message& msg) {
  Json j = Json::parse(ToJson(msg));
  YAML::Emitter out;
  Emit(out, j);
  return std::string("---\n") + out.c_str() + "\n";
}

std::string RenderOne(const google::protobuf::Message& msg, const std::string& name,
                      const std::string& human, const OutputOptions& options) {
  switch (options.format) {
    case OutputFormat::kJson:
      return ToJson(msg) + "\n";
    case OutputFormat::kYaml:
      return ToYaml(msg);
    case OutputFormat::kName:
      return name + "\n";
    case OutputFormat::kTable:
    case OutputFormat::kWide:
    case OutputFormat::kCsv:  // one object has no rows: its description
      break;
  }
  return human;
}

std::string Render(const Listing& l, const OutputOptions& options) {
  std::string out;
  switch (options.format) {
    case OutputFormat::kTable:
    case OutputFormat::kWide:
      return RenderTable(l, options.format == OutputFormat::kWide, options.no_headers);
    case OutputFormat::kJson:
      for (const auto* m : l.objects) out += ToJson(*m) + "\n";
      break;
    case OutputFormat::kYaml:
      for (const auto* m : l.objects) out += ToYaml(*m);
      break;
    case OutputFormat::kName:
      for (const auto& n : l.names) out += n + "\n";
      break;
    case OutputFormat::kCsv:
      return RenderCsv(l, options.no_headers);
  }
  return out;
}

}  // namespace baton::cli
