// baton-sim and MPS shares: Alibaba's openb pod and node lists converted column by column
// (coordinator/sim/openb.h), every bad input named; a trace's gpu_share and gpu_memory read
// and written back; and a replay where fractional tasks share pools against the same
// tasks on whole GPUs: more tasks start, and pool capacity no waiting share fits is counted.
#include <sstream>

#include "coordinator/policy_config.h"
#include "coordinator/sim/cluster_file.h"
#include "coordinator/sim/openb.h"
#include "coordinator/sim/report.h"
#include "coordinator/sim/trace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace baton::sim {
namespace {

using ::testing::HasSubstr;

const char kPods[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p0,8000,16384,1,500,V100M16,LS,Running,100,1100,110\n"
    "p1,4000,8192,1,1000,,BE,Succeeded,200,800,200\n"
    "p2,2000,1024,0,0,,BE,Succeeded,150,400,0\n"
    "p3,1000,1024,1,250,G2|T4,BE,Failed,300,300,0\n"
    "p4,16000,65536,8,1000,A100,HP,Running,400,5000,401\n"
    "p5,1000,1024,1,125,G2|T4,Burstable,Running,500,900,500\n";

TEST(SimOpenb, PodsMapColumnByColumn) {
  auto t = ConvertOpenbPods(kPods, "pods.csv", OpenbOptions{});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 5u);
  EXPECT_EQ(t->skipped, 1u) << "p3 never ran";
  const TraceJob& share = t->jobs[0];
  EXPECT_EQ(share.submit_ms, 0);
  EXPECT_EQ(share.duration_ms, 990'000) << "from its scheduled time";
  EXPECT_EQ(share.gpu_share_percent, 50u);
  EXPECT_EQ(share.gpu_memory_bytes, (16ull << 30) / 100 * 50);
  EXPECT_EQ(share.priority_class, "inference");
  EXPECT_EQ(share.gpu_model, "V100M16");
  EXPECT_EQ(share.cpu_millis_per_node, 8000u);
  EXPECT_EQ(share.memory_bytes_per_node, 16ull << 30);
  EXPECT_EQ(t->jobs[1].gpus_per_node, 1u);
  EXPECT_EQ(t->jobs[1].gpu_share_percent, 0u) << "1000 milli is a whole GPU";
  EXPECT_EQ(t->jobs[1].priority_class, "experiment");
  EXPECT_EQ(t->jobs[2].gpus_per_node, 0u) << "a CPU-only pod";
  EXPECT_EQ(t->jobs[3].gpus_per_node, 8u);
  EXPECT_EQ(t->jobs[3].priority_class, "inference") << "HP is latency-sensitive";
  EXPECT_EQ(t->jobs[4].gpu_share_percent, 13u) << "125 milli rounds up to 13%";
  EXPECT_EQ(t->jobs[4].gpu_model, "") << "two models: any GPU";
  EXPECT_EQ(t->jobs[4].priority_class, "inference") << "a share goes to the sharing class";

  OpenbOptions whole;
  whole.shares = false;
  auto w = ConvertOpenbPods(kPods, "pods.csv", whole);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs[0].gpu_share_percent, 0u);
  EXPECT_EQ(w->jobs[0].gpus_per_node, 1u) << "the baseline: a whole GPU";
  EXPECT_EQ(w->jobs[4].priority_class, "experiment");
}

TEST(SimOpenb, BadListsAreRefusedNamingLineAndColumn) {
  auto missing = ConvertOpenbPods("name,cpu_milli\np,1\n", "pods.csv", OpenbOptions{});
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("pods.csv:1: the header lacks the column 'num_gpu'"));
  std::string bad = kPods;
  bad.replace(bad.find("p1,4000"), 7, "p1,lots");
  auto t = ConvertOpenbPods(bad, "pods.csv", OpenbOptions{});
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("pods.csv:3: cpu_milli: 'lots' is not a number"));
  auto nodes = ConvertOpenbNodes("sn,cpu_milli,memory_mib,gpu,model\nn,64000,1,99,T4\n",
                                 "nodes.csv", OpenbOptions{});
  EXPECT_THAT(std::string(nodes.status().message()),
              HasSubstr("nodes.csv:2: gpu: more than 64 GPUs on one node"));
}

TEST(SimOpenb, NodesBecomeGroupsWithTheirPools) {
  OpenbOptions o;
  o.mps_gpus = 2;
  auto yaml = ConvertOpenbNodes(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "a,96000,786432,8,V100M16\nb,96000,786432,8,V100M16\nc,64000,262144,0,\n"
      "d,32000,131072,1,T4\n",
      "nodes.csv", o);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  auto cluster = ParseClusterFile(*yaml, "cluster.yaml");
  ASSERT_TRUE(cluster.ok()) << cluster.status() << "\n" << *yaml;
  ASSERT_EQ(cluster->size(), 4u);
  int pools = 0, gpus = 0;
  for (const sched::NodeInfo& n : *cluster) {
    for (const sched::GpuInfo& g : n.gpus) {
      ++gpus;
      pools += g.mps;
      EXPECT_EQ(g.memory_bytes, 16ull << 30);
    }
  }
  EXPECT_EQ(gpus, 17);
  EXPECT_EQ(pools, 5) << "two per 8-GPU node, the T4 node's one";
  EXPECT_EQ((*cluster)[0].cpu_millis, 96'000u);
}

TEST(SimTraces, SharesAreReadAndWrittenBackAndCheckedAsTheSchedulerWould) {
  auto t = ParseTrace(
      "submit,tenant,class,nodes,gpus_per_node,duration,checkpoint_interval,gpu_share,gpu_memory,"
      "user\n0,a,inference,1,1,60,0,25%,8Gi,alice\n",
      "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].gpu_share_percent, 25u);
  EXPECT_EQ((*t)[0].gpu_memory_bytes, 8ull << 30);
  EXPECT_EQ((*t)[0].user, "alice");
  std::ostringstream written;
  WriteTraceCsv(*t, written);
  auto again = ParseTrace(written.str(), "again.csv");
  ASSERT_TRUE(again.ok()) << again.status() << written.str();
  EXPECT_EQ((*again)[0].gpu_share_percent, 25u);
  EXPECT_EQ((*again)[0].gpu_memory_bytes, 8ull << 30);
  EXPECT_EQ((*again)[0].user, "alice");
  for (const char* row : {"0,a,inference,1,1,60,0,0,8Gi,u", "0,a,inference,1,1,60,0,101,8Gi,u",
                          "0,a,inference,1,1,60,0,25,,u", "0,a,inference,1,2,60,0,25,8Gi,u"}) {
    auto bad = ParseTrace(
        "submit,tenant,class,nodes,gpus_per_node,duration,checkpoint_interval,gpu_share,"
        "gpu_memory,user\n" +
            std::string(row) + "\n",
        "t.csv");
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("t.csv:2: gpu_share")) << row;
  }
}

// 4 nodes of 4 16Gi GPUs, one of each a pool; 40 fractional tasks of 10-50% arriving
// together beside 8 whole-GPU tasks, each an hour: with pools, more tasks start within
// the first 10 minutes than when each fraction takes a whole GPU.
TEST(SimShares, FractionsOnPoolsStartMoreTasksThanOnWholeGpus) {
  Policy policy = *ParsePolicy(
      "classes:\n"
      "  - {name: inference, value: 900, service: true, gpu_sharing: mps}\n"
      "  - {name: experiment, value: 100}\n"
      "defaults: {class: experiment}\n");
  std::string pods =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  for (int i = 0; i < 40; ++i) {
    pods += "f" + std::to_string(i) + ",1000,1024,1," + std::to_string(100 + 100 * (i % 5)) +
            ",,LS,Running,0,3600,0\n";
  }
  for (int i = 0; i < 8; ++i)
    pods += "w" + std::to_string(i) + ",1000,1024,1,1000,,BE,Running,0,3600,0\n";
  const std::string nodes =
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "a,64000,262144,4,V100\nb,64000,262144,4,V100\nc,64000,262144,4,V100\nd,64000,262144,4,"
      "V100\n";
  auto placed = [&](bool shares, double* stranded) {
    OpenbOptions o;
    o.shares = shares;
    o.mps_gpus = shares ? 1 : 0;
    auto trace = ConvertOpenbPods(pods, "pods.csv", o);
    auto cluster = ParseClusterFile(*ConvertOpenbNodes(nodes, "nodes.csv", o), "cluster.yaml");
    EXPECT_TRUE(trace.ok() && cluster.ok());
    SimOptions so;
    so.sample_interval_ms = 60'000;
    auto sim = SimulateTrace(*cluster, policy, trace->jobs, so, 10 * 60'000);
    nlohmann::json summary = Summarize(*sim);
    *stranded = summary["mps"]["stranded_gpu_fraction"].get<double>();
    return summary["mps"]["tasks_placed"].get<uint64_t>();
  };
  double stranded_shared = 0, stranded_whole = 0;
  const uint64_t shared = placed(true, &stranded_shared), whole = placed(false, &stranded_whole);
  EXPECT_EQ(whole, 16u) << "16 GPUs, one task each";
  // Pools: 4 × 100 units take 14 of the fractions (10..50%, best fit), the 12 whole GPUs
  // the 8 whole-GPU tasks (4 stay idle: fractions never take a whole GPU).
  EXPECT_EQ(shared, 22u);
  EXPECT_LT(stranded_shared, 0.3);
  EXPECT_EQ(stranded_whole, 0) << "no pools";
}

}  // namespace
}  // namespace baton::sim
