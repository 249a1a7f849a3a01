// NVML discovery against a fake libnvidia-ml.so.1 built by the tests (two H200s, the
// second split into MIG slices), and the inventory that reports what it serves.
#include "launcher/agent/nvml.h"

#include <stdlib.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/gpu_usage.h"
#include "launcher/agent/inventory.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::ScratchDir;
using launcher_testing::WriteFile;
using ::testing::HasSubstr;

TEST(Nvml, DiscoversWholeGpusAndMigSlicesFromTheLibrary) {
  auto gpus = DiscoverNvmlGpus({.library = FAKE_NVML_LIBRARY});
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 3u) << "GPU 0 whole, GPU 1 as its two slices";
  const GpuInfo& whole = (*gpus)[0];
  EXPECT_EQ(whole.uuid, "GPU-fake-0000");
  EXPECT_EQ(whole.model, "NVIDIA H200");
  EXPECT_EQ(whole.memory_bytes, 141ull << 30);
  EXPECT_EQ(whole.pci_bus_id, "00000000:1B:00.0");
  EXPECT_EQ(whole.numa_node, 0);
  EXPECT_EQ(whole.mig_profile, "");
  const GpuInfo& a = (*gpus)[1];
  EXPECT_EQ(a.uuid, "MIG-fake-1-slice-a");
  EXPECT_EQ(a.mig_profile, "1g.18gb");
  EXPECT_EQ(a.parent_uuid, "GPU-fake-0001");
  EXPECT_EQ(a.memory_bytes, 18ull << 30);
  EXPECT_EQ(a.numa_node, 1);
  EXPECT_EQ(a.pci_bus_id, "00000000:9A:00.0");
  EXPECT_EQ(a.index, 1u);
  EXPECT_EQ((*gpus)[2].mig_profile, "3g.71gb") << "the empty slot between is skipped";
}

TEST(Nvml, AMissingLibraryIsNotFound) {
  auto gpus = DiscoverNvmlGpus({.library = "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
}

TEST(Nvml, AFailingDriverNamesTheCall) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  auto gpus = DiscoverNvmlGpus({.library = FAKE_NVML_LIBRARY});
  unsetenv("FAKE_NVML_INIT_ERROR");
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(gpus.status().message()), HasSubstr("Init: Driver Not Loaded"));
}

TEST(Nvml, ASamplerReadsUtilisationOfWholeGpusAndMemoryOfSlices) {
  auto nvml = NvmlSampler::Open({.library = FAKE_NVML_LIBRARY});
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  for (int round = 0; round < 2; ++round) {  // loaded once, sampled again and again
    auto whole = (*nvml)->Sample("GPU-fake-0000");
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_TRUE(whole->has_percent);
    EXPECT_EQ(whole->percent, 37u);
    EXPECT_EQ(whole->memory_used_bytes, 5ull << 30);
  }
  auto slice = (*nvml)->Sample("MIG-fake-1-slice-a");
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_FALSE(slice->has_percent) << "NVML gives no utilisation of a slice: unknown, not 0%";
  auto none = (*nvml)->Sample("GPU-nope");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("GetHandleByUUID GPU-nope"));
  EXPECT_EQ(NvmlSampler::Open({.library = "/nonexistent/libnvidia-ml.so.1"}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(GpuUsage, NvmlAndFakeFilesReportEachGpuOfTheInventoryInItsOrder) {
  v1::Inventory real;
  for (const char* uuid : {"GPU-fake-0000", "MIG-fake-1-slice-a"}) real.add_gpus()->set_uuid(uuid);
  auto nvml = GpuUsageFor(real, FAKE_NVML_LIBRARY, "");
  ASSERT_NE(nvml, nullptr);
  std::vector<v1::GpuUtilization> got = nvml->Sample();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].uuid(), "GPU-fake-0000");
  EXPECT_EQ(got[0].percent(), 37u);
  EXPECT_FALSE(got[1].has_percent());
  EXPECT_EQ(GpuUsageFor(real, "", ""), nullptr) << "no NVML: nothing to sample";

  ScratchDir dir;
  const std::string file = dir.path() + "/util";
  v1::Inventory fake;
  for (const char* uuid : {"GPU-n1-0", "GPU-n1-1", "GPU-n1-2"}) {
    v1::Gpu* g = fake.add_gpus();
    g->set_uuid(uuid);
    g->set_fake(true);
  }
  EXPECT_EQ(GpuUsageFor(fake, FAKE_NVML_LIBRARY, ""), nullptr) << "fake GPUs without a file";
  auto source = GpuUsageFor(fake, FAKE_NVML_LIBRARY, file);
  ASSERT_NE(source, nullptr);
  got = source->Sample();
  ASSERT_EQ(got.size(), 3u);
  for (const auto& u : got) EXPECT_FALSE(u.has_percent()) << "no file yet: unknown";
  WriteFile(file, "* 40\nGPU-n1-1 95\nGPU-n1-2 250\ngarbage\n");
  got = source->Sample();
  EXPECT_EQ(got[0].percent(), 40u) << "the * line";
  EXPECT_EQ(got[1].percent(), 95u) << "its own line first";
  EXPECT_EQ(got[2].percent(), 40u) << "250% is no reading: the * line";
  WriteFile(file, "GPU-n1-0 7\n");
  got = source->Sample();
  EXPECT_EQ(got[0].percent(), 7u) << "read again at each sample";
  EXPECT_FALSE(got[1].has_percent());
}

TEST(Nvml, MigProfilesFromNames) {
  EXPECT_EQ(MigProfileFromName("NVIDIA H200 MIG 1g.18gb"), "1g.18gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA H200"), "");
}

class NvmlInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two SMT cores, (0,2) on NUMA node 0 and (1,3) on node 1.
    o_.topology.synthetic = "numa:2 core:1 pu:2(indexes=0,2,1,3)";
    WriteFile(dir_.Sub("proc/meminfo"), "MemTotal:       33554432 kB\n");
    o_.proc_root = dir_.Sub("proc");
    o_.node_name = "n1";
    o_.fake_gpus = 4;
  }
  ScratchDir dir_;
  InventoryOptions o_;
};

TEST_F(NvmlInventoryTest, ReportsWhatNvmlServesInsteadOfConfiguredFakes) {
  o_.nvml_library = FAKE_NVML_LIBRARY;
  auto inv = ReadInventory(o_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus_size(), 3);
  EXPECT_EQ(inv->gpus(0).uuid(), "GPU-fake-0000");
  EXPECT_FALSE(inv->gpus(0).fake());
  EXPECT_EQ(inv->gpus(1).mig_profile(), "1g.18gb");
  EXPECT_EQ(inv->gpus(1).parent_uuid(), "GPU-fake-0001");
  EXPECT_EQ(inv->gpus(2).numa_node(), 1);
  EXPECT_EQ(inv->gpus(2).pci_bus_id(), "00000000:9A:00.0");
}

TEST_F(NvmlInventoryTest, WithoutNvmlTheConfiguredGpusGoThroughTheSameCode) {
  o_.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto inv = ReadInventory(o_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus_size(), 4);
  EXPECT_TRUE(inv->gpus(3).fake());
  EXPECT_EQ(inv->gpus(0).numa_node(), 0);
  EXPECT_EQ(inv->gpus(3).numa_node(), 1);
}

TEST_F(NvmlInventoryTest, CoresGroupSmtSiblingsWithTheirNumaNode) {
  o_.nvml_library = "";
  auto inv = ReadInventory(o_);
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->cores_size(), 2);
  EXPECT_THAT(inv->cores(0).cpus(), ::testing::ElementsAre(0, 2));
  EXPECT_EQ(inv->cores(0).numa_node(), 0);
  EXPECT_THAT(inv->cores(1).cpus(), ::testing::ElementsAre(1, 3));
  EXPECT_EQ(inv->cores(1).numa_node(), 1);
}

TEST_F(NvmlInventoryTest, WithoutTheDriversNumaNodeAGpuGetsItsPciLocality) {
  o_.nvml_library = FAKE_NVML_LIBRARY;
  o_.topology = {.xml_file = std::string(BATON_SOURCE_DIR) +
                             "/tests/launcher/testdata/two_sockets_gpus.xml"};
  setenv("FAKE_NVML_NO_NUMA", "1", 1);
  auto inv = ReadInventory(o_);
  unsetenv("FAKE_NVML_NO_NUMA");
  ASSERT_TRUE(inv.ok()) << inv.status();
  ASSERT_EQ(inv->gpus_size(), 3);
  EXPECT_EQ(inv->gpus(0).numa_node(), 0) << inv->gpus(0).pci_bus_id();
  EXPECT_EQ(inv->gpus(1).numa_node(), 1) << "a slice: its GPU's";
  EXPECT_EQ(inv->gpus(2).numa_node(), 1);
}

TEST_F(NvmlInventoryTest, WithoutTheDriversNumaNodeAGpuOffTheMachineHasNone) {
  o_.nvml_library = FAKE_NVML_LIBRARY;
  o_.topology.synthetic = "numa:2 core:2 pu:1";  // no PCI devices at all
  setenv("FAKE_NVML_NO_NUMA", "1", 1);
  auto inv = ReadInventory(o_);
  unsetenv("FAKE_NVML_NO_NUMA");
  ASSERT_TRUE(inv.ok()) << inv.status();
  for (const auto& g : inv->gpus()) EXPECT_EQ(g.numa_node(), -1) << g.uuid();
}

TEST_F(NvmlInventoryTest, ADriverThatFailsFailsTheInventory) {
  o_.nvml_library = FAKE_NVML_LIBRARY;
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  auto inv = ReadInventory(o_);
  unsetenv("FAKE_NVML_INIT_ERROR");
  EXPECT_FALSE(inv.ok()) << "a broken driver is not a node without GPUs";
}

}  // namespace
}  // namespace baton
