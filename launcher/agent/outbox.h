// What the agent sends the coordinator: queued by the agent under its own lock, written by
// one writer thread per session without it, so that a coordinator slow to read holds up
// nothing but its own stream. A session's registration goes first; at most one heartbeat
// waits at a time (a stream that is not keeping up needs no more); what is queued while
// no session is open is dropped (the next registration carries every attempt's state).
// Thread-safe; its lock is taken after the agent's, never before it.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/time/time.h"
#include "launcher/agent/coordinator_link.h"
#include "proto/agent.pb.h"

namespace baton {

class AgentOutbox {
 public:
  // A new session: `first` (its registration) goes first; anything older is dropped.
  void Open(v1::AgentMessage first);
  // Queues `msg` for the session's writer; dropped when none is open, and a heartbeat
  // while another still waits.
  void Push(v1::AgentMessage msg);
  // Ends the session: what is queued is dropped and the writer returns (once a write
  // under way has).
  void Close();
  // The session's writer: writes what is queued, in order, until Close. A failed write
  // cancels the stream (its reader sees the end) and the writer returns.
  void WriteLoop(CoordinatorStream& stream);
  // After Close: until the writer has returned, at most `timeout`; false if it has not (a
  // write is stuck in the stream: cancel it).
  bool WaitWriterDone(absl::Duration timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::AgentMessage> queue_;
  bool open_ = false;              // a session is open: Push queues
  bool heartbeat_queued_ = false;  // one waits in the queue
  bool writer_done_ = true;
};

}  // namespace baton
