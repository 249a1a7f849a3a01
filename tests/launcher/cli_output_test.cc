// The listings' output formats (-o wide|json|yaml|name, --no-headers) against golden files
// in tests/launcher/golden/, from fixed protos at a fixed time.
//
// To regenerate the goldens after an intended change of output, run
//   BATON_UPDATE_GOLDEN=1 build/tests/launcher/launcher_test --gtest_filter='Golden*'
// and review `git diff tests/launcher/golden/` before committing.
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/cli/format.h"
#include "launcher/cli/listings.h"
#include "launcher/cli/options.h"
#include "launcher/cli/output.h"
#include "tests/launcher/cli_samples.h"

namespace baton::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string GoldenPath(const std::string& name) {
  return std::string(BATON_SOURCE_DIR) + "/tests/launcher/golden/" + name;
}

// Compares `actual` with the golden file `name`; BATON_UPDATE_GOLDEN=1 rewrites it.
void ExpectGolden(const std::string& name, const std::string& actual) {
  const char* update = getenv("BATON_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(GoldenPath(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(GoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << GoldenPath(name) << " is missing; BATON_UPDATE_GOLDEN=1 writes it";
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(actual, golden.str()) << "differs from " << GoldenPath(name)
                                  << " (BATON_UPDATE_GOLDEN=1 rewrites it)";
}

std::string ReadGolden(const std::string& name) {
  std::ifstream in(GoldenPath(name), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

OutputOptions Format(OutputFormat f, bool no_headers = false) { return {f, no_headers}; }

// ---------------------------------------------------------------------------------------
// Fixtures: what the coordinator could have returned at kNow.

// SampleJob evicted from its first attempt (on node-a and node-b) and running its second
// there since 3m15s.
v1::Job RunningJob() {
  v1::Job job = SampleJob();
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_exit_code(0);
  job.clear_message();
  job.set_evictions(1);
  job.mutable_spec()->set_max_restarts(3);
  job.mutable_events()->RemoveLast();
  v1::Attempt* first = job.mutable_attempts(0);
  first->set_end_reason("evicted for job 12");
  first->set_evicted_for(12);
  v1::Attempt* a = job.add_attempts();
  a->set_number(2);
  a->set_scheduled_ms(kNow - 200'000);
  a->set_started_ms(kNow - 195'000);
  a->set_checkpoint_step(400);
  *a->mutable_placement() = first->placement();
  // Placed over two leaves when one would have held it (docs/topology.md).
  a->add_topology_domains("leaf-1");
  a->add_topology_domains("leaf-2");
  a->set_topology_min_domains(1);
  return job;
}

v1::ListResponse Queue() {
  v1::ListResponse resp;
  *resp.add_jobs() = RunningJob();
  v1::Job* pending = resp.add_jobs();
  pending->set_id(18);
  pending->set_user("bob");
  pending->set_state(v1::JOB_STATE_PENDING);
  pending->set_submitted_ms(kNow - 93'000);
  pending->set_message(
      "waiting for capacity: needs 4 nodes with 8 free GPUs of model H200 in pool big; 2 "
      "have them");
  pending->mutable_spec()->set_name("a-very-long-experiment-name-v2");
  pending->mutable_spec()->set_tenant("serving");
  pending->mutable_spec()->set_priority_class("research");
  pending->mutable_spec()->set_nodes(4);
  pending->mutable_spec()->set_gpus_per_node(8);
  v1::Job* failed = resp.add_jobs();
  failed->set_id(9);
  failed->set_user("carol");
  failed->set_state(v1::JOB_STATE_FAILED);
  failed->set_submitted_ms(kNow - 7'200'000);
  failed->set_failures(1);
  failed->set_exit_code(3);
  failed->set_message("rank 0 exited with code 3");
  failed->mutable_spec()->set_name("17");  // a name YAML would read as a number
  failed->mutable_spec()->set_tenant("vision");
  failed->mutable_spec()->set_priority_class("training");
  failed->mutable_spec()->set_nodes(1);
  v1::Attempt* a = failed->add_attempts();
  a->set_number(1);
  a->set_started_ms(kNow - 7'000'000);
  a->set_ended_ms(kNow - 6'940'000);
  a->add_placement()->set_node("node-b");
  return resp;
}

v1::ListNodesResponse Nodes() {
  v1::ListNodesResponse resp;
  v1::Node* a = resp.add_nodes();
  a->set_name("node-a");
  a->set_address("10.0.0.1:7070");
  a->set_state(v1::NODE_STATE_READY);
  a->set_last_seen_ms(kNow - 2'000);
  a->set_pool("big");
  (*a->mutable_labels())["rack"] = "r1";  // one label: proto maps print in no fixed order
  a->mutable_inventory()->set_cpus(64);
  a->mutable_inventory()->set_memory_bytes(512ull << 30);
  for (int i = 0; i < 8; ++i) {
    v1::Gpu* g = a->mutable_inventory()->add_gpus();
    g->set_index(i);
    g->set_uuid("GPU-a" + std::to_string(i));
    g->set_model("NVIDIA H200");
    if (i >= 6) {  // the last two offered as MPS pools; alice's shares on the first
      g->set_memory_bytes(141ull << 30);
      g->set_mps_pool(true);
      v1::MpsPoolUse* use = a->add_mps_pools();
      use->set_uuid(g->uuid());
      if (i == 6) {
        use->set_allocated_percent(60);
        use->set_allocated_memory_bytes(40ull << 30);
        use->set_user("alice");
        use->add_jobs(21);
        use->add_jobs(22);
      }
    }
  }
  a->set_allocated_cpu_millis(32000);
  a->set_allocated_memory_bytes(256ull << 30);
  a->set_allocated_gpus(2);
  a->add_running_jobs(17);
  a->mutable_isolation()->set_mode("cgroup-v2");
  a->mutable_isolation()->set_nic("eth1");
  a->mutable_isolation()->set_nic_mbps(10000);
  v1::AttemptIsolation* iso = a->add_attempts();
  iso->set_node("node-a");
  iso->set_job_id(17);
  iso->set_attempt(2);
  iso->mutable_limits()->set_cgroup("baton/job-17-a2");
  iso->mutable_limits()->set_kind(v1::WORKLOAD_KIND_TRAINING);
  iso->mutable_limits()->set_cpus("0-31");
  iso->mutable_limits()->set_memory_limit_bytes(256ull << 30);
  iso->mutable_stats()->set_nr_periods(100);
  iso->mutable_stats()->set_nr_throttled(3);
  iso->mutable_stats()->set_memory_peak_bytes(20ull << 30);
  v1::Node* b = resp.add_nodes();
  b->set_name("node-b");
  b->set_address("10.0.0.2:7070");
  b->set_state(v1::NODE_STATE_DISCONNECTED);
  b->set_last_seen_ms(kNow - 95'000);
  b->mutable_inventory()->set_cpus(16);
  b->mutable_inventory()->set_memory_bytes(64ull << 30);
  for (const char* profile : {"1g.18gb", "1g.18gb", ""}) {
    v1::Gpu* g = b->mutable_inventory()->add_gpus();
    g->set_model("NVIDIA A100");
    g->set_mig_profile(profile);
  }
  v1::Taint* t = b->add_taints();
  t->set_key("maintenance");
  t->set_value("true");
  t->set_effect("NoSchedule");
  b->mutable_drain()->set_by("root");
  b->mutable_drain()->set_since_ms(kNow - 3'600'000);
  b->mutable_drain()->set_reason("bad DIMM");
  return resp;
}

v1::SharesResponse Shares() {
  v1::SharesResponse resp;
  auto add = [&](const char* name, double weight, double usage_h, double usage_share,
                 double weight_share, uint32_t running, uint32_t pending, int quota) {
    v1::TenantShare* t = resp.add_tenants();
    t->set_tenant(name);
    t->set_weight(weight);
    t->set_usage_gpu_seconds(usage_h * 3600);
    t->set_usage_share(usage_share);
    t->set_weight_share(weight_share);
    t->set_running_gpus(running);
    t->set_pending_gpus(pending);
    t->set_has_quota(quota >= 0);
    t->set_quota_gpus(quota >= 0 ? quota : 0);
    t->set_half_life_seconds(7 * 24 * 3600);
  };
  add("vision", 2, 300, 0.75, 0.5, 16, 32, 64);
  add("serving", 1, 100, 0.25, 0.25, 8, 0, -1);
  add("true", 1, 0, 0, 0.25, 0, 8, 8);  // a name YAML would read as a boolean
  return resp;
}

// ---------------------------------------------------------------------------------------
// Goldens: every format of queue, nodes, status and share.

struct Case {
  std::string suffix;
  OutputOptions options;
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"table.txt", Format(OutputFormat::kTable)},
      {"no-headers.txt", Format(OutputFormat::kTable, /*no_headers=*/true)},
      {"wide.txt", Format(OutputFormat::kWide)},
      {"wide-no-headers.txt", Format(OutputFormat::kWide, /*no_headers=*/true)},
      {"json", Format(OutputFormat::kJson)},
      {"yaml", Format(OutputFormat::kYaml)},
      {"name.txt", Format(OutputFormat::kName)},
  };
  return cases;
}

TEST(Golden, Queue) {
  v1::ListResponse resp = Queue();
  for (const Case& c : Cases()) {
    ExpectGolden("queue." + c.suffix, Render(QueueListing(resp.jobs(), kNow), c.options));
  }
}

TEST(Golden, Nodes) {
  v1::ListNodesResponse resp = Nodes();
  for (const Case& c : Cases()) {
    // A one-level switch tree read from the rack label: node-a's path is r1, node-b has none.
    ExpectGolden("nodes." + c.suffix,
                 Render(NodesListing(resp.nodes(), kNow, {"rack=rack"}), c.options));
  }
}

TEST(Golden, Share) {
  v1::SharesResponse resp = Shares();
  for (const Case& c : Cases()) {
    ExpectGolden("share." + c.suffix, Render(SharesListing(resp), c.options));
  }
}

TEST(Golden, Status) {
  v1::Job job = RunningJob();
  for (const Case& c : Cases()) {
    if (c.options.no_headers) continue;  // a description has no header row
    ExpectGolden("status." + c.suffix, RenderJob(job, kNow, c.options));
  }
}

// ---------------------------------------------------------------------------------------
// What the goldens hold, checked apart from their bytes.

TEST(Render, TableShowsTheDefaultColumnsAndCutsLongCells) {
  v1::ListResponse resp = Queue();
  std::string table = Render(QueueListing(resp.jobs(), kNow), Format(OutputFormat::kTable));
  EXPECT_EQ(table.rfind("ID  ", 0), 0u) << table;
  EXPECT_THAT(table, HasSubstr("a-very-long-experim…  serving"));
  EXPECT_THAT(table, Not(HasSubstr("PLACEMENT")));
  EXPECT_THAT(table, Not(HasSubstr("2 have them")));
}

TEST(Render, WideAddsColumnsAndShowsCellsWhole) {
  v1::ListResponse resp = Queue();
  std::string wide = Render(QueueListing(resp.jobs(), kNow), Format(OutputFormat::kWide));
  for (const char* column : {"GPUS/NODE", "ATTEMPTS", "FAILURES", "EVICTIONS", "RUNTIME",
                             "PLACEMENT", "a-very-long-experiment-name-v2", "2 have them"}) {
    EXPECT_THAT(wide, HasSubstr(column));
  }
  // Job 17 runs its second attempt on node-a and node-b: 3m15s so far, 1 failure of 3.
  EXPECT_THAT(wide, HasSubstr("3m15s"));
  EXPECT_THAT(wide, HasSubstr("node-a,node-b"));
  EXPECT_THAT(wide, HasSubstr("1/3"));
}

TEST(Render, NoHeadersDropsTheHeaderRowAndTheFooters) {
  v1::ListNodesResponse resp = Nodes();
  Listing l = NodesListing(resp.nodes(), kNow);
  ASSERT_THAT(l.footer, HasSubstr("PEAK MEMORY")) << "node-a's limits table";
  std::string rows = Render(l, Format(OutputFormat::kTable, /*no_headers=*/true));
  EXPECT_EQ(rows.rfind("node-a ", 0), 0u) << rows;
  EXPECT_THAT(rows, Not(HasSubstr("NAME")));
  EXPECT_THAT(rows, Not(HasSubstr("PEAK MEMORY")));
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 2) << "a line per node: " << rows;
}

TEST(Render, EmptyListingsPrintOnlyTheHeaderOrNothing) {
  v1::ListResponse none;
  Listing l = QueueListing(none.jobs(), kNow);
  EXPECT_EQ(Render(l, Format(OutputFormat::kTable)).rfind("ID  ", 0), 0u);
  for (OutputFormat f : {OutputFormat::kJson, OutputFormat::kYaml, OutputFormat::kName}) {
    EXPECT_EQ(Render(l, Format(f)), "");
  }
  EXPECT_EQ(Render(l, Format(OutputFormat::kTable, /*no_headers=*/true)), "");
}

TEST(Render, NamesAreKindSlashName) {
  v1::ListResponse q = Queue();
  EXPECT_EQ(Render(QueueListing(q.jobs(), kNow), Format(OutputFormat::kName)),
            "job/17\njob/18\njob/9\n");
  v1::ListNodesResponse n = Nodes();
  EXPECT_EQ(Render(NodesListing(n.nodes(), kNow), Format(OutputFormat::kName)),
            "node/node-a\nnode/node-b\n");
  EXPECT_EQ(Render(SharesListing(Shares()), Format(OutputFormat::kName)),
            "tenant/vision\ntenant/serving\ntenant/true\n");
  EXPECT_EQ(RenderJob(RunningJob(), kNow, Format(OutputFormat::kName)), "job/17\n");
}

TEST(Render, StatusKeepsTheDescriptionByDefaultAndWide) {
  std::string human = DescribeJob(RunningJob(), kNow);
  EXPECT_EQ(RenderJob(RunningJob(), kNow, Format(OutputFormat::kTable)), human);
  EXPECT_EQ(RenderJob(RunningJob(), kNow, Format(OutputFormat::kWide)), human);
  EXPECT_EQ(RenderJob(RunningJob(), kNow, Format(OutputFormat::kJson)),
            ToJson(RunningJob()) + "\n");
}

TEST(Render, StatusShowsAGpuShareWhereTheGpusWouldBe) {
  v1::Job job = RunningJob();
  EXPECT_THAT(DescribeJob(job, kNow), Not(HasSubstr("share")));
  job.mutable_spec()->set_gpus_per_node(1);
  job.mutable_spec()->set_gpu_share_percent(25);
  job.mutable_spec()->set_gpu_memory_bytes(20ull << 30);
  EXPECT_THAT(DescribeJob(job, kNow), HasSubstr(" rank(s), a 25% share of a GPU with 20Gi, "));
}

TEST(Render, WideNodesSortLabelsAndCountGpuModels) {
  v1::ListNodesResponse resp = Nodes();
  (*resp.mutable_nodes(0)->mutable_labels())["gpu"] = "h200";
  (*resp.mutable_nodes(0)->mutable_labels())["zone"] = "b";
  std::string wide = Render(NodesListing(resp.nodes(), kNow), Format(OutputFormat::kWide));
  for (const char* cell :
       {"gpu=h200,rack=r1,zone=b", "8x NVIDIA H200", "2x NVIDIA A100 1g.18gb, 1x NVIDIA A100",
        "maintenance=true:NoSchedule", "1m35s ago"}) {
    EXPECT_THAT(wide, HasSubstr(cell));
  }
}

TEST(Render, WideShareRanksTenantsAsTheSchedulerDoes) {
  std::string wide = Render(SharesListing(Shares()), Format(OutputFormat::kWide));
  // usage / weight: vision 300/2 = 150, serving 100, "true" 0 -> orders 3, 2, 1.
  EXPECT_THAT(wide, HasSubstr("150.00        3"));
  EXPECT_THAT(wide, HasSubstr("100.00        2"));
  EXPECT_THAT(wide, HasSubstr("0.00          1"));
  EXPECT_THAT(wide, HasSubstr("7d00h"));
}

TEST(Render, TokensNameTheirIdsAndWideSaysTheirState) {
  v1::ListTokensResponse resp;
  for (const char* id : {"t-live", "t-old", "t-gone"}) {
    v1::TokenInfo* t = resp.add_tokens();
    t->set_id(id);
    t->set_user("ci");
    t->set_created_ms(kNow - 86'400'000);
    t->set_expires_ms(kNow + 86'400'000);
  }
  resp.mutable_tokens(1)->set_expires_ms(kNow - 1);
  resp.mutable_tokens(2)->set_revoked_ms(kNow - 5);
  resp.mutable_tokens(2)->set_revoked_by("root");
  Listing l = TokensListing(resp.tokens(), kNow);
  EXPECT_EQ(Render(l, Format(OutputFormat::kName)), "token/t-live\ntoken/t-old\ntoken/t-gone\n");
  std::string wide = Render(l, Format(OutputFormat::kWide));
  EXPECT_THAT(wide, HasSubstr("STATE"));
  EXPECT_THAT(wide, HasSubstr("t-live  ci    *       active"));
  EXPECT_THAT(wide, HasSubstr("t-old   ci    *       expired"));
  EXPECT_THAT(wide, HasSubstr("t-gone  ci    *       revoked"));
  EXPECT_THAT(Render(l, Format(OutputFormat::kTable)), Not(HasSubstr("active")));
}

TEST(Render, EventsWideAddsWhatTheLineLeavesOut) {
  v1::Event e;
  e.set_log_seq(12);
  e.set_kind(v1::EVENT_KIND_EVICTION);
  e.set_job_id(3);
  e.set_attempt(2);
  e.set_tenant("vision");
  e.set_priority_class("training");
  e.set_lost_gpu_seconds(12.5);
  e.set_reason("evicted for job 4");
  std::string line = RenderEvent(e, Format(OutputFormat::kTable));
  EXPECT_EQ(line, EventLine(e) + "\n");
  EXPECT_EQ(RenderEvent(e, Format(OutputFormat::kWide)),
            EventLine(e) + "  [attempt 2, tenant vision, class training, lost 12.5 GPU-s]\n");
  EXPECT_EQ(RenderEvent(e, Format(OutputFormat::kName)), "event/12\n");
  EXPECT_EQ(RenderEvent(e, Format(OutputFormat::kJson)), ToJson(e) + "\n");
  EXPECT_EQ(RenderEvent(e, Format(OutputFormat::kYaml)).rfind("---\njobId: \"3\"\n", 0), 0u);
}

// ---------------------------------------------------------------------------------------
// YAML: the same values as the JSON.

// A YAML node as JSON: quoted scalars are strings; plain ones are read as YAML 1.2's core
// schema reads them (null, booleans, numbers, else strings).
nlohmann::json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Null:
      return nullptr;
    default:
      break;
  }
  std::string s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted
  if (s == "true" || s == "false") return s == "true";
  nlohmann::json number = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
  return number.is_number() ? number : nlohmann::json(s);
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::vector<nlohmann::json> YamlDocuments(const std::string& text) {
  std::vector<nlohmann::json> out;
  for (const YAML::Node& doc : YAML::LoadAll(text)) out.push_back(YamlToJson(doc));
  return out;
}

TEST(Yaml, GoldenYamlParsesBackToTheGoldenJson) {
  for (const char* listing : {"queue", "nodes", "share", "status"}) {
    std::vector<nlohmann::json> json = JsonLines(ReadGolden(std::string(listing) + ".json"));
    std::vector<nlohmann::json> yaml = YamlDocuments(ReadGolden(std::string(listing) + ".yaml"));
    ASSERT_FALSE(json.empty()) << listing;
    ASSERT_EQ(yaml.size(), json.size()) << listing;
    for (size_t i = 0; i < json.size(); ++i) {
      EXPECT_EQ(yaml[i], json[i]) << listing << " object " << i << "\nyaml: " << yaml[i].dump()
                                  << "\njson: " << json[i].dump();
    }
  }
}

TEST(Yaml, QuotesStringsThatWouldReadAsOtherTypes) {
  v1::TenantShare t;
  t.set_tenant("true");
  std::string yaml = ToYaml(t);
  EXPECT_EQ(yaml.rfind("---\ntenant: \"true\"\n", 0), 0u) << yaml;
  EXPECT_THAT(yaml, HasSubstr("weight: 0\n"));
  EXPECT_THAT(yaml, HasSubstr("hasQuota: false\n"));
  v1::Job job;
  job.set_id(5);
  job.mutable_spec()->set_name("");
  job.mutable_spec()->add_command("sh");
  job.mutable_spec()->add_command("-c");
  job.mutable_spec()->add_command("echo 'a: b'\nexit 1");
  yaml = ToYaml(job);
  EXPECT_THAT(yaml, HasSubstr("id: \"5\"\n")) << "uint64 is a string in proto3 JSON";
  EXPECT_THAT(yaml, HasSubstr("name: \"\"\n"));
  EXPECT_THAT(yaml, HasSubstr("attempts: []\n"));
  std::vector<nlohmann::json> back = YamlDocuments(yaml);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], nlohmann::json::parse(ToJson(job)));
}

// ---------------------------------------------------------------------------------------
// The flags.

TEST(ParseOutputOptions, AcceptsEachFormat) {
  const std::pair<std::string, OutputFormat> cases[] = {{"wide", OutputFormat::kWide},
                                                        {"json", OutputFormat::kJson},
                                                        {"yaml", OutputFormat::kYaml},
                                                        {"name", OutputFormat::kName}};
  for (const auto& [value, format] : cases) {
    auto o = ParseOutputOptions(&value, /*json=*/false, /*no_headers=*/false);
    ASSERT_TRUE(o.ok()) << value << ": " << o.status();
    EXPECT_EQ(o->format, format) << value;
  }
  auto def = ParseOutputOptions(nullptr, /*json=*/false, /*no_headers=*/false);
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->format, OutputFormat::kTable);
}

TEST(ParseOutputOptions, UnknownValueNamesItAndTheAcceptedOnes) {
  for (std::string bad : {"xml", "", "JSON", "table", "wide,json"}) {
    auto o = ParseOutputOptions(&bad, /*json=*/false, /*no_headers=*/false);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(o.status().message()), HasSubstr("'" + bad + "'"));
    EXPECT_THAT(std::string(o.status().message()), HasSubstr("wide, json, yaml, name, csv"));
  }
}

TEST(ParseOutputOptions, JsonFlagIsOutputJson) {
  auto json = ParseOutputOptions(nullptr, /*json=*/true, /*no_headers=*/false);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->format, OutputFormat::kJson);
  std::string value = "json";
  auto both = ParseOutputOptions(&value, /*json=*/true, /*no_headers=*/false);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->format, OutputFormat::kJson);
  for (std::string other : {"yaml", "wide", "name"}) {
    auto conflict = ParseOutputOptions(&other, /*json=*/true, /*no_headers=*/false);
    ASSERT_FALSE(conflict.ok()) << other;
    EXPECT_THAT(std::string(conflict.status().message()), HasSubstr("--json and -o " + other));
  }
}

TEST(ParseOutputOptions, NoHeadersOnlyWithTables) {
  auto table = ParseOutputOptions(nullptr, /*json=*/false, /*no_headers=*/true);
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(table->no_headers);
  std::string wide = "wide";
  EXPECT_TRUE(ParseOutputOptions(&wide, /*json=*/false, /*no_headers=*/true).ok());
  std::string csv = "csv";
  EXPECT_TRUE(ParseOutputOptions(&csv, /*json=*/false, /*no_headers=*/true).ok());
  for (std::string other : {"json", "yaml", "name"}) {
    auto o = ParseOutputOptions(&other, /*json=*/false, /*no_headers=*/true);
    ASSERT_FALSE(o.ok()) << other;
    EXPECT_THAT(std::string(o.status().message()),
                HasSubstr("--no-headers applies to tables (the default, -o wide and -o csv); -o " +
                          other + " has no header row"));
  }
  EXPECT_FALSE(ParseOutputOptions(nullptr, /*json=*/true, /*no_headers=*/true).ok());
}

cxxopts::Options ListingFlags() {
  cxxopts::Options opts("baton queue", "test");
  AddCommonFlags(opts);
  AddOutputFlags(opts);
  return opts;
}

TEST(OutputFlags, ParseReadsEverySpelling) {
  const std::pair<std::vector<std::string>, OutputFormat> cases[] = {
      {{"-o", "yaml"}, OutputFormat::kYaml},       {{"-oname"}, OutputFormat::kName},
      {{"--output", "wide"}, OutputFormat::kWide}, {{"--output=json"}, OutputFormat::kJson},
      {{"--json"}, OutputFormat::kJson},           {{}, OutputFormat::kTable}};
  for (const auto& [args, format] : cases) {
    cxxopts::Options opts = ListingFlags();
    int code = kOk;
    auto r = Parse(opts, args, &code);
    ASSERT_TRUE(r) << ::testing::PrintToString(args);
    EXPECT_EQ(Output(*r).format, format) << ::testing::PrintToString(args);
  }
  cxxopts::Options opts = ListingFlags();
  int code = kOk;
  auto r = Parse(opts, {"--no-headers", "-o", "wide"}, &code);
  ASSERT_TRUE(r);
  EXPECT_TRUE(Output(*r).no_headers);
}

TEST(OutputFlags, BadCombinationsAreUsageErrorsThatSayWhy) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"-o", "xml"}, "-o 'xml': unknown output format; use one of wide, json, yaml, name, csv"},
      {{"-o", "yaml", "--json"}, "--json and -o yaml conflict"},
      {{"--no-headers", "-o", "name"}, "--no-headers applies to tables"},
      {{"-o"}, "is missing an argument"},
  };
  for (const auto& [args, message] : cases) {
    cxxopts::Options opts = ListingFlags();
    int code = kOk;
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(Parse(opts, args, &code)) << ::testing::PrintToString(args);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, kUsage) << ::testing::PrintToString(args);
    EXPECT_THAT(err, HasSubstr(message));
    EXPECT_EQ(err.rfind("baton queue: ", 0), 0u) << err;
  }
}

TEST(OutputFlags, CommandsWithoutThemStillTakeJson) {
  cxxopts::Options opts("baton cancel", "test");
  AddCommonFlags(opts);
  int code = kOk;
  auto r = Parse(opts, {"--json"}, &code);
  ASSERT_TRUE(r);
  EXPECT_EQ(Output(*r).format, OutputFormat::kJson);
  cxxopts::Options no_o("baton cancel", "test");
  AddCommonFlags(no_o);
  EXPECT_FALSE(Parse(no_o, {"-o", "json"}, &code)) << "-o only where a command lists";
  EXPECT_EQ(code, kUsage);
}

}  // namespace
}  // namespace baton::cli

namespace baton::cli {
namespace {

// -o csv: RFC 4180, every column (wide ones too), cells with commas, quotes or line
// breaks quoted with their quotes doubled; --no-headers drops the header row.
TEST(Csv, QuotesWhatNeedsItAndKeepsEveryColumn) {
  Listing l;
  l.columns = {{"ID"}, {"NAME"}, {"WIDE", true}};
  l.rows = {{"1", "plain", "w"}, {"2", "a,b \"q\"\nline", ""}};
  l.footer = "not in csv\n";
  OutputOptions o;
  o.format = OutputFormat::kCsv;
  EXPECT_EQ(Render(l, o), "ID,NAME,WIDE\r\n1,plain,w\r\n2,\"a,b \"\"q\"\"\nline\",\r\n");
  o.no_headers = true;
  EXPECT_EQ(Render(l, o), "1,plain,w\r\n2,\"a,b \"\"q\"\"\nline\",\r\n");
}

TEST(UsageListing, RowsPerKeyWithWaitsAndTheDaysCovered) {
  v1::UsageResponse u;
  u.set_since_ms(1'764'547'200'000);  // 2025-12-01
  u.set_until_ms(1'764'547'200'000 + 2 * 86'400'000LL);
  u.add_tenants("vision");
  v1::UsageLine* a = u.add_lines();
  a->set_key("alice");
  a->set_gpu_hours(12.345);
  a->set_lost_gpu_hours(0.5);
  a->set_succeeded(3);
  a->set_failed(1);
  a->set_evictions(2);
  a->set_waits(4);
  a->set_wait_p50_seconds(90);
  a->set_wait_p95_seconds(3600);
  v1::UsageLine* b = u.add_lines();
  b->set_key("carol");
  OutputOptions o;
  Listing l = UsageListing(u, v1::USAGE_GROUP_USER);
  const std::string text = Render(l, o);
  EXPECT_THAT(text, HasSubstr("USER"));
  EXPECT_THAT(text, HasSubstr("12.35"));
  EXPECT_THAT(text, HasSubstr("1m30s"));
  EXPECT_THAT(text, HasSubstr("1h"));
  EXPECT_THAT(text, HasSubstr("UTC days 2025-12-01 to 2025-12-02 (whole days), tenants vision"));
  EXPECT_EQ(l.names, (std::vector<std::string>{"user/alice", "user/carol"}));
  EXPECT_EQ(l.rows[1][8], "-") << "no waits: no percentile";
  o.format = OutputFormat::kJson;
  EXPECT_THAT(Render(l, o), HasSubstr("\"waitP95Seconds\":3600"));
}

TEST(HistoryListing, StartEndNodesAndGpuHours) {
  v1::Job j;
  j.set_id(17);
  j.set_user("alice");
  j.mutable_spec()->set_tenant("vision");
  j.set_state(v1::JOB_STATE_SUCCEEDED);
  j.set_finished_ms(1'764'547'200'000 + 3'600'000);
  for (int i = 0; i < 2; ++i) {
    v1::Attempt* a = j.add_attempts();
    a->set_scheduled_ms(1'764'547'200'000 + i * 1'800'000);
    a->set_started_ms(a->scheduled_ms() + 60'000);
    a->set_ended_ms(a->scheduled_ms() + 1'800'000);
    v1::NodeAssignment* p = a->add_placement();
    p->set_node(i == 0 ? "n1" : "n2");
    p->add_gpu_ids("GPU-0");
    p->add_gpu_ids("GPU-1");
  }
  google::protobuf::RepeatedPtrField<v1::Job> jobs;
  *jobs.Add() = j;
  Listing l = HistoryListing(jobs);
  ASSERT_EQ(l.rows.size(), 1u);
  const auto& row = l.rows[0];
  EXPECT_EQ(row[0], "17");
  EXPECT_EQ(row[6], "2025-12-01 00:01") << "the first attempt's start";
  EXPECT_EQ(row[7], "2025-12-01 01:00");
  EXPECT_EQ(row[9], "n2") << "the last attempt's nodes";
  EXPECT_EQ(row[10], "2.00") << "2 GPUs for 30 min, twice";
}

TEST(ParseWhen, DurationsDatesAndTimes) {
  const int64_t now = 1'764'547'200'000;  // 2025-12-01T00:00:00Z
  EXPECT_EQ(ParseWhen("30d", now).value(), now - 30 * 86'400'000LL);
  EXPECT_EQ(ParseWhen("12h", now).value(), now - 12 * 3'600'000LL);
  EXPECT_EQ(ParseWhen("2025-11-01", now).value(), 1'761'955'200'000);
  EXPECT_EQ(ParseWhen("2025-11-01T08:00:00Z", now).value(), 1'761'955'200'000 + 8 * 3'600'000LL);
  for (const char* bad : {"yesterday", "-3d", "2025-13-01", ""}) {
    auto w = ParseWhen(bad, now);
    ASSERT_FALSE(w.ok()) << bad;
    EXPECT_THAT(std::string(w.status().message()), HasSubstr("expected a duration before now"));
  }
}

}  // namespace
}  // namespace baton::cli
