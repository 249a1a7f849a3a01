// kubectl-style output of the CLI's listings: `-o wide|json|yaml|name` and `--no-headers`,
// parsed and checked here, and one renderer (Render) that turns a Listing — table cells,
// the objects, their names — into the text of each format. The commands build a Listing
// from what they fetched (listings.h) and print Render's result. Pure; thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace baton::cli {

enum class OutputFormat {
  kTable,  // the default: an aligned table (or a command's human text)
  kWide,   // the table with more columns, cells not truncated
  kJson,   // proto3 JSON, one object per line (= --json)
  kYaml,   // the same objects as YAML, each its own document opened by "---"
  kName,   // one "<kind>/<name>" per line: job/17, node/n1, tenant/vision, token/t-1
  kCsv,    // RFC 4180: a header row (unless --no-headers), then every column of each row
};

// Whether a command's own text is printed: the table formats (csv included: one object has
// no rows, so its description is printed as the table would be).
inline bool HumanFormat(OutputFormat f) {
  return f == OutputFormat::kTable || f == OutputFormat::kWide || f == OutputFormat::kCsv;
}

struct OutputOptions {
  OutputFormat format = OutputFormat::kTable;  // -o / --output, or --json
  bool no_headers = false;                     // --no-headers: the table rows only
};

// The accepted -o values, for help texts and errors.
inline constexpr char kOutputValues[] = "wide, json, yaml, name, csv";

// Checks the flags together. `output` is -o's value (nullptr when not given). Errors
// (InvalidArgument, a usage error): an unknown value, named with the accepted ones;
// --json with -o other than json; --no-headers with json, yaml or name, which have no
// header to drop (kubectl ignores it there; we say so rather than guess).
absl::StatusOr<OutputOptions> ParseOutputOptions(const std::string* output, bool json,
                                                 bool no_headers);

// One YAML document: "---\n" then `msg` in the proto3 JSON mapping (the field names and
// values of ToJson, in field order), ending in a newline. Strings that YAML would read as
// another type ("17", "true", "") are quoted, so the document parses back to the JSON.
std::string ToYaml(const google::protobuf::Message& msg);

// A column of a listing's table.
struct Column {
  std::string header;
  bool wide_only = false;  // shown with -o wide only
  size_t max_width = 0;    // the default table cuts cells to this many bytes ("…" last);
                           // 0: never. -o wide shows every cell whole.
};

// What every format needs from one listing. `rows`, `objects` and `names` are parallel:
// one entry per object, in the order shown. The objects are borrowed.
struct Listing {
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;  // a cell per column
  std::vector<const google::protobuf::Message*> objects;
  std::vector<std::string> names;  // "job/17"
  // Printed after the table (default and wide) unless --no-headers: a note, a second
  // table. Starts with its own separating blank line if it wants one.
  std::string footer;
};

// The listing in `options`' format. Tables with no rows print only their header (none
// with --no-headers); json, yaml and name print nothing for no objects.
std::string Render(const Listing& listing, const OutputOptions& options);

// One object that has no table: `human` for the default and wide formats (a command's
// description), else its JSON, YAML or name.
std::string RenderOne(const google::protobuf::Message& msg, const std::string& name,
                      const std::string& human, const OutputOptions& options);

}  // namespace baton::cli
