#include "coordinator/web/sse.h"

#include <memory>

#include "absl/strings/numbers.h"

namespace baton::web {

std::string SseEvent(std::string_view id, std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(data.size() + id.size() + event.size() + 24);
  if (!id.empty()) out.append("id: ").append(id).append("\n");
  if (!event.empty()) out.append("event: ").append(event).append("\n");
  // JSON text from our own printers holds no raw newline; one is split into data lines
  // all the same, so that no record can forge another.
  size_t start = 0;
  for (;;) {
    size_t nl = data.find_first_of("\r\n", start);
    out.append("data: ").append(data.substr(start, nl - start)).append("\n");
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out.append("\n");
  return out;
}

bool SseResumeFrom(const httplib::Request& req, uint64_t* after) {
  *after = 0;
  std::string text = req.get_header_value("Last-Event-ID");
  if (text.empty()) text = req.get_param_value("after");
  return text.empty() || absl::SimpleAtoi(text, after);
}

bool SseWriter::Begin(httplib::DataSink& sink, bool* ended) {
  *ended = false;
  if (!started_) {
    started_ = true;
    const std::string hello = "retry: " + std::to_string(kSseRetryMs) + "\n: baton\n\n";
    if (!sink.write(hello.data(), hello.size())) return false;
  }
  if (stopping_->load()) {
    sink.done();
    *ended = true;
  }
  return true;
}

bool SseWriter::Write(httplib::DataSink& sink, const std::string& events) {
  if (events.empty()) {
    if (!sink.is_writable()) return false;
    if (absl::Now() - last_write_ < kSseHeartbeat) return true;
    last_write_ = absl::Now();
    return sink.write(": ping\n\n", 9);
  }
  last_write_ = absl::Now();
  return sink.write(events.data(), events.size());
}

void ServeSse(const std::atomic<bool>* stopping, SseStep step, httplib::Response& res) {
  res.set_header("X-Accel-Buffering", "no");  // nginx in front: pass each event through
  auto writer = std::make_shared<SseWriter>(stopping);
  res.set_chunked_content_provider(
      "text/event-stream", [writer, step = std::move(step)](size_t, httplib::DataSink& sink) {
        bool ended = false;
        if (!writer->Begin(sink, &ended)) return false;
        return ended || step(*writer, sink);
      });
}

}  // namespace baton::web
