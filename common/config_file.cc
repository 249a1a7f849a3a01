#include "common/config_file.h"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "yaml-cpp/yaml.h"

namespace baton {
namespace {

const std::set<std::string> kMeta = {"help", "version", "config", "print-config"};

struct Flag {
  bool boolean = false;
  bool list = false;
  const cxxopts::HelpOptionDetails* details = nullptr;
};

// Every flag by its long name; `shorts` maps one-letter aliases to it.
std::map<std::string, Flag> FlagsOf(const cxxopts::Options& opts,
                                    std::map<std::string, std::string>* shorts) {
  std::map<std::string, Flag> flags;
  for (const auto& group : opts.groups()) {
    for (const auto& o : opts.group_help(group).options) {
      if (o.l.empty()) continue;
      flags[o.l.front()] = {o.is_boolean, o.is_container, &o};
      if (shorts && !o.s.empty()) (*shorts)[o.s] = o.l.front();
    }
  }
  return flags;
}

// The long names of the flags `args` sets, and the --config value ("" when none).
std::set<std::string> GivenFlags(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& shorts,
                                 std::string* config) {
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    std::string name;
    if (a.rfind("--", 0) == 0) {
      name = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      if (name == "config") {
        if (a.find('=') != std::string::npos) {
          *config = a.substr(a.find('=') + 1);
        } else if (i + 1 < args.size()) {
          *config = args[i + 1];
        }
      }
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      auto it = shorts.find(a.substr(1, 1));
      if (it != shorts.end()) name = it->second;
    }
    if (!name.empty()) given.insert(name);
  }
  return given;
}

}  // namespace

void AddConfigFileFlags(cxxopts::Options& opts, const std::string& default_config) {
  opts.add_options()("config",
                     "YAML file of settings: every flag is a key (a list for repeatable "
                     "ones); flags given here win (default " +
                         default_config + " if it exists)",
                     cxxopts::value<std::string>())(
      "print-config", "print the settings in effect as a config file and exit");
}

absl::StatusOr<std::vector<std::string>> WithConfigFile(const cxxopts::Options& opts,
                                                        const std::vector<std::string>& args,
                                                        const std::string& default_config) {
  std::map<std::string, std::string> shorts;
  std::map<std::string, Flag> flags = FlagsOf(opts, &shorts);
  std::string path;
  std::set<std::string> given = GivenFlags(args, shorts, &path);
  if (path.empty()) {
    if (default_config.empty() || access(default_config.c_str(), F_OK) != 0) return args;
    path = default_config;
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("config " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().size() > (1u << 20)) {
    return absl::InvalidArgumentError("config " + path + ": larger than 1 MiB");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError("config " + path + ": not YAML: " + e.what());
  }
  std::vector<std::string> out;
  if (root.IsNull()) return args;  // an empty file: nothing set
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("config " + path + ": must be a map of flag: value");
  }
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    auto it = flags.find(key);
    if (it == flags.end() || kMeta.count(key)) {
      return absl::InvalidArgumentError("config " + path + ": unknown key '" + key +
                                        "' (keys are the flags of --help, without --)");
    }
    if (given.count(key)) continue;  // the command line wins
    const YAML::Node& v = kv.second;
    if (v.IsSequence()) {
      if (!it->second.list) {
        return absl::InvalidArgumentError("config " + path + ": '" + key +
                                          "' takes one value, not a list");
      }
      for (const auto& item : v) {
        if (!item.IsScalar()) {
          return absl::InvalidArgumentError("config " + path + ": '" + key +
                                            "' must be a list of values");
        }
        out.push_back("--" + key + "=" + item.Scalar());
      }
    } else if (v.IsScalar() && it->second.boolean) {
      // A switch is on or off; off is the same as not given (daemons test count()).
      bool on = false;
      if (!YAML::convert<bool>::decode(v, on)) {
        return absl::InvalidArgumentError("config " + path + ": '" + key +
                                          "' is a switch: true or false, not '" + v.Scalar() + "'");
      }
      if (on) out.push_back("--" + key);
    } else if (v.IsScalar()) {
      out.push_back("--" + key + "=" + v.Scalar());
    } else if (v.IsNull()) {
      continue;  // `key:` with nothing: the default
    } else {
      return absl::InvalidArgumentError("config " + path + ": '" + key +
                                        "' must be a value or a list of values");
    }
  }
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

absl::StatusOr<cxxopts::ParseResult> ParseWithConfigFile(cxxopts::Options& opts, int argc,
                                                         char** argv,
                                                         const std::string& default_config) {
  std::vector<std::string> own(argv + 1, argv + argc);
  auto args = WithConfigFile(opts, own, default_config);
  if (!args.ok()) return args.status();
  std::vector<const char*> merged = {argv[0]};
  for (const auto& a : *args) merged.push_back(a.c_str());
  try {
    cxxopts::ParseResult r = opts.parse(static_cast<int>(merged.size()), merged.data());
    if (r.count("print-config")) {
      std::cout << PrintConfig(opts, r);
      std::exit(0);
    }
    return r;
  } catch (const cxxopts::exceptions::exception& e) {
    // Name the file's key when one of its values is what does not parse.
    for (size_t i = 0; i + own.size() < args->size(); ++i) {
      const char* one[] = {argv[0], (*args)[i].c_str()};
      try {
        opts.parse(2, one);
      } catch (const cxxopts::exceptions::exception& bad) {
        std::string key = (*args)[i].substr(2, (*args)[i].find('=') - 2);
        return absl::InvalidArgumentError("config: '" + key + "': " + bad.what());
      }
    }
    return absl::InvalidArgumentError(e.what());
  }
}

std::string PrintConfig(const cxxopts::Options& opts, const cxxopts::ParseResult& r) {
  std::map<std::string, std::vector<std::string>> given;
  for (const auto& kv : r.arguments()) given[kv.key()].push_back(kv.value());
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& [name, flag] : FlagsOf(opts, nullptr)) {
    if (kMeta.count(name)) continue;
    auto it = given.find(name);
    if (flag.list) {
      out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
      if (it != given.end()) {
        for (const auto& v : it->second) out << v;
      }
      out << YAML::EndSeq;
    } else if (it != given.end()) {
      out << YAML::Key << name << YAML::Value << it->second.back();
    } else if (flag.boolean) {
      out << YAML::Key << name << YAML::Value << "false";
    } else if (flag.details->has_default) {
      out << YAML::Key << name << YAML::Value << flag.details->default_value;
    }
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace baton
