// Daemon settings from a YAML file as well as from flags (`--config FILE`): every long
// flag is a key of the file (`log-level: debug`), its value a scalar (a flag that takes
// none: true or false) or, for a repeatable flag, a list. The command line wins over the
// file. A key that is no flag, a map value, or a file that does not parse is refused with
// the file and the key named. `--print-config` prints the settings in effect as such a file
// (every flag, defaults included) and exits. Used by baton-coordinator and baton-agent.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cxxopts.hpp"

namespace baton {

// Adds --config and --print-config to `opts` (call once, after the daemon's own flags).
void AddConfigFileFlags(cxxopts::Options& opts, const std::string& default_config);

// The command line `args` (without argv[0]) with the settings of the file it names with
// --config (or `default_config` where that file exists) placed before its own flags.
absl::StatusOr<std::vector<std::string>> WithConfigFile(const cxxopts::Options& opts,
                                                        const std::vector<std::string>& args,
                                                        const std::string& default_config);

// Parses argv with its config file. On --print-config prints the settings and exits 0.
// Errors (a bad file, a bad flag) name the problem.
absl::StatusOr<cxxopts::ParseResult> ParseWithConfigFile(cxxopts::Options& opts, int argc,
                                                         char** argv,
                                                         const std::string& default_config);

// The settings in effect, as a config file (YAML): every flag but help, version, config
// and print-config; a flag without a default that was not given is left out.
std::string PrintConfig(const cxxopts::Options& opts, const cxxopts::ParseResult& r);

}  // namespace baton
