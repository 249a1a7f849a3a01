// A benchmark's flags, through cxxopts: --help prints them and exits 0; a flag it does not
// know, a value of the wrong kind or out of range, or a stray argument prints what is wrong
// and the flags, and exits 2, before anything runs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cxxopts.hpp>
#include <string>

namespace baton::bench {

[[noreturn]] inline void BadFlags(const cxxopts::Options& opts, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n%s", opts.program().c_str(), why.c_str(), opts.help().c_str());
  std::exit(2);
}

inline cxxopts::ParseResult ParseFlags(cxxopts::Options& opts, int argc, const char* const* argv) {
  opts.add_options()("h,help", "print these flags");
  cxxopts::ParseResult r;
  try {
    r = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    BadFlags(opts, e.what());
  }
  if (r.count("help")) {
    std::printf("%s", opts.help().c_str());
    std::exit(0);
  }
  if (!r.unmatched().empty()) BadFlags(opts, "unexpected argument '" + r.unmatched()[0] + "'");
  return r;
}

// The value of --`name`, which must be at least `min`.
template <typename T>
T FlagAtLeast(const cxxopts::Options& opts, const cxxopts::ParseResult& r, const std::string& name,
              T min) {
  T v = r[name].as<T>();
  if (v < min) {
    BadFlags(opts, "--" + name + " must be at least " + std::to_string(min) + " (got " +
                       std::to_string(v) + ")");
  }
  return v;
}

}  // namespace baton::bench
