#include "launcher/agent/outbox.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/launcher/test_util.h"

namespace baton {
namespace {

using launcher_testing::WaitUntil;

// A stream that records what is written; writes can be held (a coordinator slow to read)
// or fail (a broken stream).
class RecordingStream : public CoordinatorStream {
 public:
  bool Write(const v1::AgentMessage& msg) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++writing_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !hold_ || cancelled_; });
    --writing_;
    if (cancelled_ || fail_) return false;
    written_.push_back(msg);
    cv_.notify_all();
    return true;
  }
  bool Read(v1::CoordinatorCommand*) override { return false; }
  void Cancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  absl::Status Finish() override { return absl::OkStatus(); }

  void Hold(bool hold) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = hold;
    cv_.notify_all();
  }
  void Fail() {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = true;
  }
  bool WaitWriting() {
    std::unique_lock<std::mutex> lock(mu_);
    return WaitUntil(cv_, lock, [&] { return writing_ > 0; });
  }
  // Until `n` messages are written; then what was, as a string of kinds
  // ("r" registration, "h" heartbeat, "p<job>" report).
  std::string WaitWritten(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    WaitUntil(cv_, lock, [&] { return written_.size() >= n; });
    std::string out;
    for (const auto& m : written_) {
      if (m.has_register_()) out += "r";
      if (m.has_heartbeat()) out += "h";
      if (m.has_report()) out += "p" + std::to_string(m.report().job_id());
    }
    return out;
  }
  bool cancelled() {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1::AgentMessage> written_;
  bool hold_ = false, fail_ = false, cancelled_ = false;
  int writing_ = 0;
};

v1::AgentMessage Registration() {
  v1::AgentMessage m;
  m.mutable_register_()->set_node("n1");
  return m;
}
v1::AgentMessage Heartbeat() {
  v1::AgentMessage m;
  m.mutable_heartbeat()->set_time_ms(1);
  return m;
}
v1::AgentMessage Report(uint64_t job) {
  v1::AgentMessage m;
  m.mutable_report()->set_job_id(job);
  return m;
}

// The registration first, then everything in order; while a write is stuck, reports
// queue up behind it and heartbeats collapse into one.
TEST(AgentOutbox, WritesInOrderAndHoldsOneHeartbeatWhileAWriteIsStuck) {
  AgentOutbox outbox;
  RecordingStream stream;
  outbox.Push(Report(1));  // no session: dropped
  outbox.Open(Registration());
  stream.Hold(true);
  std::thread writer([&] { outbox.WriteLoop(stream); });
  ASSERT_TRUE(stream.WaitWriting());  // the registration, held
  for (int i = 0; i < 5; ++i) outbox.Push(Heartbeat());
  outbox.Push(Report(2));
  outbox.Push(Heartbeat());  // one is still waiting
  outbox.Push(Report(3));
  stream.Hold(false);
  EXPECT_EQ(stream.WaitWritten(4), "rhp2p3");
  outbox.Push(Heartbeat());  // the last was taken for writing: this one goes too
  EXPECT_EQ(stream.WaitWritten(5), "rhp2p3h");
  outbox.Close();
  EXPECT_TRUE(outbox.WaitWriterDone(absl::Seconds(10)));
  writer.join();
  EXPECT_FALSE(stream.cancelled());
}

// A failed write cancels the stream and ends the writer; a write stuck past Close keeps
// the writer until the stream is cancelled.
TEST(AgentOutbox, AFailedWriteCancelsTheStreamAndAStuckOneIsReportedAtClose) {
  {
    AgentOutbox outbox;
    RecordingStream stream;
    stream.Fail();
    outbox.Open(Registration());
    std::thread writer([&] { outbox.WriteLoop(stream); });
    EXPECT_TRUE(outbox.WaitWriterDone(absl::Seconds(10)));
    writer.join();
    EXPECT_TRUE(stream.cancelled());
  }
  AgentOutbox outbox;
  RecordingStream stream;
  stream.Hold(true);
  outbox.Open(Registration());
  std::thread writer([&] { outbox.WriteLoop(stream); });
  ASSERT_TRUE(stream.WaitWriting());
  outbox.Close();
  EXPECT_FALSE(outbox.WaitWriterDone(absl::Milliseconds(50))) << "a stuck write went unseen";
  stream.Cancel();
  EXPECT_TRUE(outbox.WaitWriterDone(absl::Seconds(10)));
  writer.join();
  outbox.Push(Report(4));  // closed: dropped
  EXPECT_EQ(stream.WaitWritten(0), "");
}

}  // namespace
}  // namespace baton
