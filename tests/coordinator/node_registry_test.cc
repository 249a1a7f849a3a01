#include "coordinator/node_registry.h"

#include "gtest/gtest.h"
#include "tests/coordinator/harness.h"

namespace baton::testing {
namespace {

v1::CoordinatorCommand Ack(uint64_t job) {
  v1::CoordinatorCommand cmd;
  cmd.mutable_ack()->set_job_id(job);
  return cmd;
}

const absl::Time kT0 = absl::FromUnixSeconds(1000);

// Commands go to a node's current stream only: a stream that a re-registration replaced
// neither receives them nor, as it ends, disconnects the node.
TEST(NodeRegistry, CommandsGoToTheCurrentStreamAndAnOldStreamsEndChangesNothing) {
  NodeRegistry nodes;
  auto first = std::make_shared<RecordingLink>();
  auto second = std::make_shared<RecordingLink>();
  nodes.Connect("n1", first, kT0);
  nodes.Send({{"n1", Ack(1)}, {"n2", Ack(2)}});  // n2 never registered: dropped
  EXPECT_EQ(first->Take().size(), 1u);

  NodeRegistry::Entry& e = nodes.Connect("n1", second, kT0 + absl::Seconds(5));
  EXPECT_EQ(e.last_seen, kT0 + absl::Seconds(5));
  EXPECT_FALSE(nodes.Disconnect("n1", first.get())) << "the replaced stream ended";
  EXPECT_EQ(nodes.Find("n1")->link, second);
  nodes.Send({{"n1", Ack(3)}});
  EXPECT_TRUE(first->Take().empty());
  ASSERT_EQ(second->Take().size(), 1u);

  EXPECT_TRUE(nodes.Disconnect("n1", second.get()));
  EXPECT_EQ(nodes.Find("n1")->link, nullptr);
  nodes.Send({{"n1", Ack(4)}});
  EXPECT_TRUE(second->Take().empty()) << "sent to a node whose stream ended";
  EXPECT_FALSE(nodes.Disconnect("unknown", second.get()));
}

// A lost node is cut off until it registers again; hearing from it moves its lease.
TEST(NodeRegistry, ALostNodeGetsNoCommandsUntilItRegistersAgain) {
  NodeRegistry nodes;
  auto link = std::make_shared<RecordingLink>();
  NodeRegistry::Entry& e = nodes.Connect("n1", link, kT0);
  EXPECT_EQ(e.node.name(), "n1");
  nodes.Seen("n1", kT0 + absl::Seconds(3));
  nodes.Seen("unknown", kT0 + absl::Seconds(3));
  EXPECT_EQ(nodes.Find("n1")->last_seen, kT0 + absl::Seconds(3));
  EXPECT_EQ(nodes.Find("unknown"), nullptr);
  nodes.Cut(e);
  nodes.Send({{"n1", Ack(1)}});
  EXPECT_TRUE(link->Take().empty());
  nodes.Connect("n1", link, kT0 + absl::Seconds(9));
  nodes.Send({{"n1", Ack(2)}});
  EXPECT_EQ(link->Take().size(), 1u);
}

// Loaded at start, a node waits to reconnect (a lost one stays lost), its lease counted
// from the load.
TEST(NodeRegistry, NodesLoadedAtStartAreDisconnectedOrStillLost) {
  NodeRegistry nodes;
  v1::Node ready, lost;
  ready.set_name("a");
  ready.set_state(v1::NODE_STATE_READY);
  lost.set_name("b");
  lost.set_state(v1::NODE_STATE_LOST);
  nodes.Load(ready, kT0);
  nodes.Load(lost, kT0);
  EXPECT_EQ(nodes.Find("a")->node.state(), v1::NODE_STATE_DISCONNECTED);
  EXPECT_EQ(nodes.Find("b")->node.state(), v1::NODE_STATE_LOST);
  EXPECT_EQ(nodes.Find("a")->last_seen, kT0);
  EXPECT_EQ(nodes.Find("a")->link, nullptr);
  EXPECT_EQ(nodes.all().size(), 2u);
}

}  // namespace
}  // namespace baton::testing
