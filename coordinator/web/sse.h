// Server-sent events (the WHATWG HTML standard's text/event-stream) for the dashboard's
// live views: how a record is framed, and the headers every stream carries.
#pragma once

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace baton::web {

// How long a stream stays silent before a comment line keeps proxies and the browser
// from closing it, and how soon a browser reconnects after the stream drops.
inline constexpr absl::Duration kSseHeartbeat = absl::Seconds(15);
inline constexpr int kSseRetryMs = 2000;

// One event: `id` (what the browser sends back as Last-Event-ID when it reconnects),
// `event` (its type; "" for "message") and `data`, a JSON text of one line.
std::string SseEvent(std::string_view id, std::string_view event, std::string_view data);

// The resumption point a reconnecting browser sent (Last-Event-ID), else the `after`
// query parameter; 0 for none. False when the one given is not a number.
bool SseResumeFrom(const httplib::Request& req, uint64_t* after);

// What a stream keeps between the calls of its content provider (each a step of at most
// about a second): the first bytes, the server's end, heartbeats, a client that went.
class SseWriter {
 public:
  explicit SseWriter(const std::atomic<bool>* stopping) : stopping_(stopping) {}
  // At the start of a step: the reconnection delay, once. False when the client went;
  // `*ended` when the server stops (the stream is then ended).
  bool Begin(httplib::DataSink& sink, bool* ended);
  // The step's events (none: a heartbeat when one is due, once the connection is found
  // still open, so that a closed page gives its place back within a step). False when
  // the client went.
  bool Write(httplib::DataSink& sink, const std::string& events);

 private:
  const std::atomic<bool>* const stopping_;
  bool started_ = false;
  absl::Time last_write_ = absl::Now();
};

// Answers with a text/event-stream: `step` is called again and again with the stream's
// writer (each call at most about a second; Begin already done) until it returns false,
// ends the sink, or `stopping` is set.
using SseStep = std::function<bool(SseWriter&, httplib::DataSink&)>;
void ServeSse(const std::atomic<bool>* stopping, SseStep step, httplib::Response& res);

}  // namespace baton::web
