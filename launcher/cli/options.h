// Flag parsing shared by the subcommands: the common flags every command takes, and
// running cxxopts so that its exceptions become one-line usage errors. Single-threaded.
#pragma once

#include <cxxopts.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/client.h"

namespace baton::cli {

// Adds --coordinator, --timeout, --json and --help to `opts`.
void AddCommonFlags(cxxopts::Options& opts);

// Parses; on error prints "baton <cmd>: <message>" and returns nullopt with *code set
// (kUsage, or kOk after --help).
std::optional<cxxopts::ParseResult> Parse(cxxopts::Options& opts,
                                          const std::vector<std::string>& args, int* code);

// Environment defaults overridden by --coordinator and --timeout.
std::optional<ConnectOptions> Connection(const cxxopts::ParseResult& r, int* code);

// The positional job ids, parsed; prints the error and sets *code on a bad one.
std::optional<std::vector<uint64_t>> JobIds(const cxxopts::ParseResult& r, const char* cmd,
                                            int* code);

}  // namespace baton::cli
