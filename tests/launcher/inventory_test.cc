#include "launcher/agent/inventory.h"

#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/gpu_modes.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::ScratchDir;
using launcher_testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseCpuList, ExpandsRangesAndSingles) {
  auto cpus = ParseCpuList("0-3,8,10-11");
  ASSERT_TRUE(cpus.ok()) << cpus.status();
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8, 10, 11));
}

TEST(ParseCpuList, AcceptsOneCpuAndTheTrailingNewlineSysfsWrites) {
  EXPECT_THAT(*ParseCpuList("5"), ElementsAre(5));
  EXPECT_THAT(*ParseCpuList("0-1\n"), ElementsAre(0, 1));
  EXPECT_THAT(*ParseCpuList("7-7"), ElementsAre(7));
}

TEST(ParseCpuList, EmptyListMeansNoCpus) {
  auto empty = ParseCpuList("");
  ASSERT_TRUE(empty.ok());
  EXPECT_THAT(*empty, IsEmpty());
  auto newline = ParseCpuList("\n");  // a memory-only NUMA node's cpulist
  ASSERT_TRUE(newline.ok());
  EXPECT_THAT(*newline, IsEmpty());
}

TEST(ParseCpuList, RejectsMalformedListsNamingThem) {
  for (const std::string bad : {"a", "1-", "-1", "3-1", "1,,2", "0-3,x", "1 2", "0-70000"}) {
    auto cpus = ParseCpuList(bad);
    ASSERT_FALSE(cpus.ok()) << "'" << bad << "' parsed";
    EXPECT_EQ(cpus.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(cpus.status().message()), HasSubstr("'" + bad + "'"));
  }
}

// A synthetic hwloc topology and a fake /proc: 8 CPUs on two NUMA nodes, 32 GiB.
class InventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(Proc("meminfo"), "MemTotal:       33554432 kB\nMemFree:        1234 kB\n");
    options_.topology.synthetic = "numa:2(memory=16GiB) core:4 pu:1";
    options_.proc_root = dir_.Sub("proc");
    options_.node_name = "node-a";
    options_.nvml_library = "";  // the fake GPUs, even on a machine with NVIDIA
  }
  std::string Proc(const std::string& p) const { return dir_.Sub("proc/" + p); }

  ScratchDir dir_;
  InventoryOptions options_;
};

TEST_F(InventoryTest, CountsCpusMemoryAndNumaNodes) {
  options_.nic = "eth1";
  options_.nic_mbps = 25000;
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  EXPECT_EQ(inv->cpus(), 8u);
  EXPECT_EQ(inv->memory_bytes(), 32ull << 30);
  ASSERT_EQ(inv->numa_nodes_size(), 2);
  EXPECT_EQ(inv->numa_nodes(0).id(), 0);
  EXPECT_THAT(inv->numa_nodes(0).cpus(), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(inv->numa_nodes(0).memory_bytes(), 16ull << 30);
  EXPECT_EQ(inv->numa_nodes(1).id(), 1);
  EXPECT_THAT(inv->numa_nodes(1).cpus(), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(inv->numa_nodes(1).memory_bytes(), 16ull << 30);
  ASSERT_EQ(inv->cores_size(), 8);
  EXPECT_THAT(inv->cores(5).cpus(), ElementsAre(5));
  EXPECT_EQ(inv->cores(5).numa_node(), 1);
  EXPECT_EQ(inv->gpus_size(), 0);
  EXPECT_EQ(inv->nic(), "eth1");
  EXPECT_EQ(inv->nic_mbps(), 25000u);
}

TEST_F(InventoryTest, MemoryOnlyNodesComeInNumberOrderWithoutCpus) {
  options_.topology = {.xml_file = std::string(BATON_SOURCE_DIR) +
                                   "/tests/launcher/testdata/two_sockets_gpus.xml"};
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  std::vector<int> ids;
  for (const auto& n : inv->numa_nodes()) ids.push_back(n.id());
  EXPECT_THAT(ids, ElementsAre(0, 1, 10));
  EXPECT_THAT(inv->numa_nodes(2).cpus(), IsEmpty());
  EXPECT_EQ(inv->numa_nodes(2).memory_bytes(), 64ull << 30);
  EXPECT_THAT(inv->numa_nodes(1).cpus(), ElementsAre(2, 3, 6, 7));
  options_.fake_gpus = 3;
  auto with_gpus = ReadInventory(options_);
  ASSERT_TRUE(with_gpus.ok()) << with_gpus.status();
  for (const auto& g : with_gpus->gpus()) EXPECT_NE(g.numa_node(), 10) << "memory only";
}

TEST_F(InventoryTest, InventsFakeGpusSpreadOverNumaNodes) {
  options_.fake_gpus = 4;
  options_.fake_gpu_model = "FakeH200";
  options_.fake_gpu_memory_bytes = 141ull << 30;
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus_size(), 4);
  std::set<std::string> uuids;
  std::vector<int> numa;
  for (int i = 0; i < inv->gpus_size(); ++i) {
    const v1::Gpu& g = inv->gpus(i);
    EXPECT_EQ(g.index(), static_cast<uint32_t>(i));
    EXPECT_EQ(g.model(), "FakeH200");
    EXPECT_EQ(g.memory_bytes(), 141ull << 30);
    EXPECT_TRUE(g.fake());
    EXPECT_THAT(g.uuid(), HasSubstr("node-a"));
    uuids.insert(g.uuid());
    numa.push_back(g.numa_node());
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_THAT(numa, ElementsAre(0, 0, 1, 1));
}

TEST_F(InventoryTest, FakeGpusInMigModeAreListedAsTheirSlices) {
  options_.fake_gpus = 2;
  options_.fake_gpu_memory_bytes = 80ull << 30;
  ASSERT_TRUE(ParseFakeMig("3g.40gb:2", &options_).ok());
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus_size(), 4);
  std::set<std::string> uuids, parents;
  for (const v1::Gpu& g : inv->gpus()) {
    EXPECT_EQ(g.mig_profile(), "3g.40gb");
    EXPECT_EQ(g.memory_bytes(), 40ull << 30);
    EXPECT_THAT(g.uuid(), ::testing::StartsWith("MIG-"));
    EXPECT_THAT(g.parent_uuid(), ::testing::StartsWith("GPU-"));
    uuids.insert(g.uuid());
    parents.insert(g.parent_uuid());
  }
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_EQ(parents.size(), 2u);
  EXPECT_EQ(inv->gpus(1).parent_uuid(), inv->gpus(0).parent_uuid());
}

TEST(FakeMig, RefusesWhatIsNotProfileColonSlices) {
  InventoryOptions o;
  for (const char* bad : {"", "3g.40gb", "3g.40gb:0", "3g.40gb:8", "3g.40gb:x", "40gb:2", "3g.40:2",
                          "0g.10gb:1", ":2", "3g.40gbx:2"}) {
    absl::Status s = ParseFakeMig(bad, &o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("--fake-mig")) << bad;
  }
  ASSERT_TRUE(ParseFakeMig("1g.18gb:7", &o).ok());
  EXPECT_EQ(o.fake_mig_profile, "1g.18gb");
  EXPECT_EQ(o.fake_mig_slices, 7u);
}

TEST_F(InventoryTest, GpusNamedByMpsGpusAreOfferedAsPoolsTheRestStayWhole) {
  options_.fake_gpus = 4;
  options_.mps_gpus = "1,GPU-fake-node-a-3";
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  std::vector<bool> pools;
  for (const v1::Gpu& g : inv->gpus()) pools.push_back(g.mps_pool());
  EXPECT_THAT(pools, ElementsAre(false, true, false, true));
  options_.mps_gpus = "all";
  inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  for (const v1::Gpu& g : inv->gpus()) EXPECT_TRUE(g.mps_pool());
}

TEST_F(InventoryTest, AMigGpuIsNeverAnMpsPool) {
  options_.fake_gpus = 2;
  ASSERT_TRUE(ParseFakeMig("3g.40gb:2", &options_).ok());
  options_.mps_gpus = "all";  // every GPU not in MIG mode: none here
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  for (const v1::Gpu& g : inv->gpus()) EXPECT_FALSE(g.mps_pool());
  options_.mps_gpus = "0";  // named: refused, saying why
  inv = ReadInventory(options_);
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(inv.status().message()), HasSubstr("GPU 0 is in MIG mode"));
}

TEST(GpuModes, MpsGpusRefusesWhatItCannotName) {
  v1::Inventory inv;
  for (uint32_t i = 0; i < 2; ++i) {
    v1::Gpu* g = inv.add_gpus();
    g->set_index(i);
    g->set_uuid("GPU-" + std::to_string(i));
  }
  struct Case {
    const char* selector;
    const char* says;
  } cases[] = {{"2", "--mps-gpus: this node has no GPU 2"},
               {"GPU-9", "--mps-gpus: this node has no GPU GPU-9"},
               {"0,", "--mps-gpus: \"\" is neither a GPU index nor a GPU-"},
               {"first", "--mps-gpus: \"first\" is neither"},
               {"-1", "--mps-gpus: \"-1\" is neither"}};
  for (const Case& c : cases) {
    v1::Inventory copy = inv;
    absl::Status s = MarkMpsPools(c.selector, &copy);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.selector;
    EXPECT_THAT(std::string(s.message()), ::testing::StartsWith(c.says)) << c.selector;
    for (const v1::Gpu& g : copy.gpus()) EXPECT_FALSE(g.mps_pool()) << "nothing half-marked";
  }
  ASSERT_TRUE(MarkMpsPools("", &inv).ok());
  for (const v1::Gpu& g : inv.gpus()) EXPECT_FALSE(g.mps_pool());
}

TEST_F(InventoryTest, FakeGpuUuidsDifferBetweenNodes) {
  options_.fake_gpus = 2;
  auto a = ReadInventory(options_);
  options_.node_name = "node-b";
  auto b = ReadInventory(options_);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& ga : a->gpus()) {
    for (const auto& gb : b->gpus()) EXPECT_NE(ga.uuid(), gb.uuid());
  }
}

TEST_F(InventoryTest, WithoutNumaOneNodeHoldsEverything) {
  options_.topology.synthetic = "core:8 pu:1";  // hwloc still makes the one node
  options_.fake_gpus = 2;
  auto inv = ReadInventory(options_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->numa_nodes_size(), 1);
  EXPECT_EQ(inv->numa_nodes(0).id(), 0);
  EXPECT_THAT(inv->numa_nodes(0).cpus(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  for (const auto& g : inv->gpus()) EXPECT_EQ(g.numa_node(), 0);
}

TEST_F(InventoryTest, AMalformedTopologyIsAnErrorNamingIt) {
  options_.topology.synthetic = "numa:2 core:x";
  auto inv = ReadInventory(options_);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(inv.status().message()), HasSubstr("numa:2 core:x"));
}

TEST_F(InventoryTest, MissingMeminfoIsAnErrorNamingIt) {
  std::filesystem::remove(Proc("meminfo"));
  auto inv = ReadInventory(options_);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(inv.status().message()), HasSubstr(Proc("meminfo")));
}

TEST_F(InventoryTest, MeminfoWithoutMemTotalIsDataLoss) {
  WriteFile(Proc("meminfo"), "MemFree: 12 kB\n");
  auto inv = ReadInventory(options_);
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(inv.status().message()), HasSubstr("MemTotal"));
}

}  // namespace
}  // namespace baton
