// The hwloc topology: this machine against what the kernel says in /proc and /sys, hwloc
// synthetic topologies, and an XML two-socket node with GPUs and a memory-only node.
#include "launcher/agent/topology.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/agent/inventory.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string kTwoSockets =
    std::string(BATON_SOURCE_DIR) + "/tests/launcher/testdata/two_sockets_gpus.xml";

std::unique_ptr<Topology> MustLoad(const TopologySource& source) {
  auto topo = Topology::Load(source);
  EXPECT_TRUE(topo.ok()) << topo.status();
  return topo.ok() ? std::move(*topo) : nullptr;
}

// Every CPU of every core, in order: each CPU in exactly one core.
std::vector<uint32_t> CoreCpus(const Topology& t) {
  std::vector<uint32_t> all;
  for (const auto& c : t.cores()) all.insert(all.end(), c.cpus.begin(), c.cpus.end());
  std::sort(all.begin(), all.end());
  return all;
}

TEST(Topology, ThisMachineAgreesWithTheKernel) {
  auto topo = MustLoad({});
  ASSERT_NE(topo, nullptr);
  // CPUs: sysconf's online count, /proc/cpuinfo's processors, sysfs's online list.
  EXPECT_EQ(topo->cpus().size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  size_t processors = 0;
  while (std::getline(cpuinfo, line)) processors += line.rfind("processor", 0) == 0;
  EXPECT_EQ(topo->cpus().size(), processors);
  auto online = ParseCpuList(launcher_testing::ReadFile("/sys/devices/system/cpu/online"));
  ASSERT_TRUE(online.ok()) << online.status();
  EXPECT_EQ(topo->cpus(), *online);
  EXPECT_EQ(CoreCpus(*topo), *online);
  // NUMA nodes: the kernel's node<N> directories (none: one node, as hwloc makes).
  std::vector<int32_t> kernel_nodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    std::string name = e.path().filename();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && isdigit(name[4])) {
      kernel_nodes.push_back(std::stoi(name.substr(4)));
    }
  }
  std::sort(kernel_nodes.begin(), kernel_nodes.end());
  if (kernel_nodes.empty()) kernel_nodes = {0};
  ASSERT_EQ(topo->numa_nodes().size(), kernel_nodes.size());
  for (size_t i = 0; i < kernel_nodes.size(); ++i) {
    const NumaNodeTopology& n = topo->numa_nodes()[i];
    EXPECT_EQ(n.id, kernel_nodes[i]);
    EXPECT_GT(n.memory_bytes, 0u) << "node " << n.id;
    std::string list = "/sys/devices/system/node/node" + std::to_string(n.id) + "/cpulist";
    if (!std::filesystem::exists(list)) continue;
    auto cpus = ParseCpuList(launcher_testing::ReadFile(list));
    ASSERT_TRUE(cpus.ok()) << cpus.status();
    EXPECT_EQ(n.cpus, *cpus) << "node " << n.id;
  }
}

TEST(Topology, SyntheticTwoNumaNodesListTheirCpusAndCores) {
  auto topo = MustLoad({.synthetic = "numa:2 core:4 pu:2"});
  ASSERT_NE(topo, nullptr);
  EXPECT_EQ(topo->cpus().size(), 16u);
  ASSERT_EQ(topo->numa_nodes().size(), 2u);
  EXPECT_EQ(topo->numa_nodes()[0].id, 0);
  EXPECT_THAT(topo->numa_nodes()[0].cpus, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(topo->numa_nodes()[1].id, 1);
  EXPECT_THAT(topo->numa_nodes()[1].cpus, ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  ASSERT_EQ(topo->cores().size(), 8u);
  EXPECT_THAT(topo->cores()[0].cpus, ElementsAre(0, 1));
  EXPECT_EQ(topo->cores()[0].numa_node, 0);
  EXPECT_THAT(topo->cores()[7].cpus, ElementsAre(14, 15));
  EXPECT_EQ(topo->cores()[7].numa_node, 1);
}

TEST(Topology, SiblingsNumberedApartStayInOneCore) {
  // As on most x86 servers: core c holds CPUs c and c+4. The XML node is laid out alike.
  for (const TopologySource& source :
       {TopologySource{.synthetic = "numa:2 core:2 pu:2(indexes=0,4,1,5,2,6,3,7)"},
        TopologySource{.xml_file = kTwoSockets}}) {
    SCOPED_TRACE(source.synthetic + source.xml_file);
    auto topo = MustLoad(source);
    ASSERT_NE(topo, nullptr);
    EXPECT_THAT(topo->numa_nodes()[0].cpus, ElementsAre(0, 1, 4, 5));
    EXPECT_THAT(topo->numa_nodes()[1].cpus, ElementsAre(2, 3, 6, 7));
    ASSERT_EQ(topo->cores().size(), 4u);
    EXPECT_THAT(topo->cores()[1].cpus, ElementsAre(1, 5));
    EXPECT_THAT(topo->cores()[3].cpus, ElementsAre(3, 7));
    EXPECT_EQ(topo->cores()[2].numa_node, 1);
  }
}

TEST(Topology, MemoryOnlyNodesHaveNoCpusAndComeInNumberOrder) {
  auto topo = MustLoad({.xml_file = kTwoSockets});
  ASSERT_NE(topo, nullptr);
  std::vector<int32_t> ids;
  for (const auto& n : topo->numa_nodes()) ids.push_back(n.id);
  EXPECT_THAT(ids, ElementsAre(0, 1, 10));
  EXPECT_THAT(topo->numa_nodes()[2].cpus, IsEmpty()) << "hwloc gives it the machine's CPUs";
  EXPECT_EQ(topo->numa_nodes()[2].memory_bytes, 64ull << 30);
  EXPECT_EQ(topo->numa_nodes()[0].memory_bytes, 16ull << 30);
  EXPECT_EQ(topo->cpus().size(), 8u);
}

TEST(Topology, PciDevicesAreLocalToTheirSocketsNode) {
  auto topo = MustLoad({.xml_file = kTwoSockets});
  ASSERT_NE(topo, nullptr);
  EXPECT_EQ(topo->NumaNodeOfPci("0000:1b:00.0"), 0);
  EXPECT_EQ(topo->NumaNodeOfPci("00000000:9A:00.0"), 1) << "NVML's spelling";
  EXPECT_EQ(topo->NumaNodeOfPci("0000:00:03.0"), -1) << "off the machine: local to no node";
  EXPECT_EQ(topo->NumaNodeOfPci("0000:5e:00.0"), -1) << "no such device";
  EXPECT_EQ(topo->NumaNodeOfPci("9a:00.0"), -1) << "malformed";
}

TEST(Topology, ParsesPciBusIdsInBothSpellings) {
  PciAddress a;
  ASSERT_TRUE(ParsePciBusId("00000000:3B:00.1", &a));
  EXPECT_EQ(a.domain, 0u);
  EXPECT_EQ(a.bus, 0x3bu);
  EXPECT_EQ(a.dev, 0u);
  EXPECT_EQ(a.func, 1u);
  ASSERT_TRUE(ParsePciBusId("0001:9a:1f.7", &a));
  EXPECT_EQ(a.domain, 1u);
  EXPECT_EQ(a.dev, 0x1fu);
  for (const std::string bad : {"", "3b:00.0", "0000:3b:00", "0000:3b:00.8", "0000:3g:00.0",
                                "0000:3b:20.0", "0000::00.0", "0000:3b.00:0", "0000:3b:00.0x"}) {
    EXPECT_FALSE(ParsePciBusId(bad, &a)) << bad;
  }
}

TEST(Topology, AMalformedSyntheticDescriptionIsInvalidNamingIt) {
  auto topo = Topology::Load({.synthetic = "numa:2 cores:banana"});
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(topo.status().message()), HasSubstr("'numa:2 cores:banana'"));
}

TEST(Topology, AMissingOrBrokenXmlFileIsInvalidNamingIt) {
  auto missing = Topology::Load({.xml_file = "/nonexistent/topo.xml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/topo.xml"));
  launcher_testing::ScratchDir dir;
  launcher_testing::WriteFile(dir.Sub("broken.xml"), "<topology version=\"2.0\"><object");
  auto broken = Topology::Load({.xml_file = dir.Sub("broken.xml")});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(broken.status().message()), HasSubstr(dir.Sub("broken.xml")));
}

TEST(Topology, OneSourceAtATime) {
  auto topo = Topology::Load({.synthetic = "core:2 pu:1", .xml_file = kTwoSockets});
  EXPECT_EQ(topo.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace baton
