// Daemon config files (common/config_file.h): every flag is a key, the command line wins,
// bad files are refused with the key named, --print-config round-trips through the real
// daemons, and SIGHUP re-reads the file — keeping the settings in effect when it does not
// check — while SIGTERM stops cleanly.
#include "common/config_file.h"

#include <signal.h>

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/security.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"
#include "yaml-cpp/yaml.h"

namespace baton::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

cxxopts::Options Daemon() {
  cxxopts::Options opts("daemon", "a test daemon");
  opts.add_options()("listen", "address", cxxopts::value<std::string>()->default_value("a:1"))(
      "count", "a number", cxxopts::value<int>()->default_value("3"))(
      "label", "repeatable", cxxopts::value<std::vector<std::string>>())("insecure", "a switch")(
      "h,help", "help");
  AddConfigFileFlags(opts, "");
  return opts;
}

std::string Write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.Sub(name);
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<cxxopts::ParseResult> Parse(cxxopts::Options& opts, std::vector<std::string> args) {
  args.insert(args.begin(), "daemon");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseWithConfigFile(opts, static_cast<int>(argv.size()), argv.data(), "");
}

TEST(ConfigFile, EveryFlagIsAKeyAndTheCommandLineWins) {
  TempDir dir("baton-config");
  std::string file =
      Write(dir, "d.yaml", "listen: b:2\ncount: 7\nlabel: [x=1, y=2]\ninsecure: true\n");
  auto opts = Daemon();
  auto r = Parse(opts, {"--config", file, "--count=9"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)["listen"].as<std::string>(), "b:2");
  EXPECT_EQ((*r)["count"].as<int>(), 9) << "the flag wins over the file";
  EXPECT_THAT((*r)["label"].as<std::vector<std::string>>(), ElementsAre("x=1", "y=2"));
  EXPECT_EQ((*r).count("insecure"), 1u);
  // A switch set false in the file is off, not "given".
  auto opts3 = Daemon();
  auto off = Parse(opts3, {"--config", Write(dir, "off.yaml", "insecure: false\n")});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ((*off).count("insecure"), 0u);
  // A repeatable flag given on the command line replaces the file's list.
  auto opts2 = Daemon();
  auto r2 = Parse(opts2, {"--config=" + file, "--label", "z=3"});
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_THAT((*r2)["label"].as<std::vector<std::string>>(), ElementsAre("z=3"));
}

TEST(ConfigFile, BadFilesAreRefusedWithTheKeyNamed) {
  TempDir dir("baton-config");
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"listen: b:2\nlisten-addr: c:3\n", "unknown key 'listen-addr'"},
      {"config: other.yaml\n", "unknown key 'config'"},
      {"count: [1, 2]\n", "'count' takes one value, not a list"},
      {"label: {a: b}\n", "'label' must be a value or a list of values"},
      {"label: [[a]]\n", "'label' must be a list of values"},
      {"- listen\n", "must be a map of flag: value"},
      {"listen: [unclosed\n", "not YAML"},
      {"count: many\n", "count"},
      {"insecure: maybe\n", "'insecure' is a switch: true or false"},
  };
  for (const auto& c : cases) {
    std::string file = Write(dir, "bad.yaml", c.text);
    auto opts = Daemon();
    auto r = Parse(opts, {"--config", file});
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.says)) << c.text;
  }
  auto opts = Daemon();
  auto missing = Parse(opts, {"--config", dir.Sub("none.yaml")});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("cannot be read"));
  // An empty file sets nothing.
  auto opts2 = Daemon();
  auto empty = Parse(opts2, {"--config", Write(dir, "empty.yaml", "")});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)["count"].as<int>(), 3);
}

TEST(ConfigFile, TheDefaultFileIsReadOnlyWhereItExists) {
  TempDir dir("baton-config");
  auto opts = Daemon();
  auto none = WithConfigFile(opts, {"--count=1"}, dir.Sub("absent.yaml"));
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, ElementsAre("--count=1"));
  auto some = WithConfigFile(opts, {"--count=1"}, Write(dir, "d.yaml", "listen: q:9\n"));
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_THAT(*some, ElementsAre("--listen=q:9", "--count=1"));
}

// The settings `binary --print-config` prints, with `args`, as a map.
std::map<std::string, std::string> Printed(const std::string& binary,
                                           std::vector<std::string> args) {
  args.insert(args.begin(), std::string(BATON_BIN_DIR) + "/" + binary);
  args.push_back("--print-config");
  CommandResult r = RunProcess(args, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> out;
  YAML::Node root = YAML::Load(r.out);
  for (const auto& kv : root) {
    if (kv.second.IsSequence()) {
      std::string joined;
      for (const auto& v : kv.second) joined += v.Scalar() + ";";
      out[kv.first.Scalar()] = joined;
    } else {
      out[kv.first.Scalar()] = kv.second.Scalar();
    }
  }
  return out;
}

TEST(ConfigFile, EveryKeyOfTheDaemonsRoundTripsThroughPrintConfig) {
  TempDir dir("baton-config");
  for (std::string binary : {"baton-coordinator", "baton-agent"}) {
    // Every key, each set to a value that is not its default where one can be chosen.
    std::map<std::string, std::string> defaults = Printed(binary, {});
    ASSERT_GT(defaults.size(), 10u) << binary;
    YAML::Emitter file;
    file << YAML::BeginMap;
    std::map<std::string, std::string> expected;
    for (const auto& [key, value] : defaults) {
      std::string v = value;
      if (key == "log-level") v = "debug";
      if (key == "listen") v = "127.0.0.1:4242";
      if (key == "retention") v = "12d";
      if (key == "data-dir") v = dir.Sub(binary);
      if (key == "label" || key == "taint") {
        file << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq << "a=b"
             << "c=d" << YAML::EndSeq;
        expected[key] = "a=b;c=d;";
        continue;
      }
      file << YAML::Key << key << YAML::Value << v;
      expected[key] = v;
    }
    file << YAML::EndMap;
    std::string path = Write(dir, binary + ".yaml", file.c_str());
    std::map<std::string, std::string> printed = Printed(binary, {"--config", path});
    for (const auto& [key, value] : expected) {
      EXPECT_EQ(printed[key], value) << binary << " " << key;
    }
    EXPECT_EQ(printed.size(), expected.size()) << binary;
    // And the command line still wins over the file.
    EXPECT_EQ(Printed(binary, {"--config", path, "--log-level", "warn"})["log-level"], "warn");
  }
}

TEST(ConfigFile, SighupReloadsOrKeepsTheSettingsAndSigtermStopsCleanly) {
  TempDir dir("baton-config");
  std::string config = Write(dir, "coordinator.yaml", "log-level: info\nmax-follows: 50\n");
  std::string ready = dir.Sub("ready");
  TestSecurity security(dir.Sub("security"));  // TLS and munged, as a real coordinator has
  ASSERT_TRUE(security.ok()) << security.why();
  std::vector<std::string> argv = {std::string(BATON_BIN_DIR) + "/baton-coordinator",
                                   "--config",
                                   config,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--data-dir",
                                   dir.Sub("data"),
                                   "--ready-file",
                                   ready};
  for (auto& f : security.CoordinatorFlags()) argv.push_back(f);
  Subprocess coordinator(argv, {}, dir.Sub("coordinator"));
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(ready).empty(); }, std::chrono::seconds(30)))
      << ReadFile(dir.Sub("coordinator.err"));
  auto log = [&] { return ReadFile(dir.Sub("coordinator.err")); };
  // A broken file: the daemon keeps running on what it had, and says why.
  Write(dir, "coordinator.yaml", "log-level: debug\nmax-follow: 10\n");
  coordinator.Signal(SIGHUP);
  ASSERT_TRUE(
      WaitFor([&] { return log().find("kept the settings in effect") != std::string::npos; },
              std::chrono::seconds(10)))
      << log();
  EXPECT_THAT(log(), HasSubstr("unknown key 'max-follow'"));
  EXPECT_TRUE(coordinator.running());
  // A good one applies.
  Write(dir, "coordinator.yaml", "log-level: debug\nmax-follows: 20\n");
  coordinator.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return log().find("reloaded: log-level debug") != std::string::npos; },
                      std::chrono::seconds(10)))
      << log();
  EXPECT_THAT(log(), HasSubstr("max-follows 20"));
  // A broken policy file: checked on reload, refused with why; the policy in force stays.
  Write(dir, "policy.yaml", "classes: [{name: x, value: nope}]\n");
  Write(dir, "coordinator.yaml", "log-level: debug\npolicy: " + dir.Sub("policy.yaml") + "\n");
  coordinator.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor(
      [&] {
        return log().find("does not check; the policy in force (version") != std::string::npos;
      },
      std::chrono::seconds(10)))
      << log();
  EXPECT_THAT(log(), HasSubstr("stays:"));
  EXPECT_TRUE(coordinator.running());
  coordinator.Signal(SIGTERM);
  EXPECT_EQ(coordinator.Wait(std::chrono::seconds(20)), 0) << log();
}

}  // namespace
}  // namespace baton::testing
