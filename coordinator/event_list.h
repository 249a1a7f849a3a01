// A job's events in memory, packed: each event's wire form, length-prefixed, in one
// string. An unfinished job keeps its events for `baton status` (they are also in the
// store, but the newest may not be durable yet); a million pending jobs with a submit
// event each keep ~60 bytes apiece this way instead of ~260 as parsed messages.
// A record that does not parse (only AppendRecord takes one unparsed: a stored event read
// at start-up) comes back as an event saying so, never as an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto/api.pb.h"

namespace baton {

class EventList {
 public:
  EventList() = default;
  EventList(std::vector<v1::Event> events) {  // NOLINT: a list of events is one
    for (const auto& ev : events) push_back(ev);
  }

  void push_back(const v1::Event& ev);
  // An event's wire form as stored, appended without parsing it.
  void AppendRecord(std::string_view record);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Every event, oldest first, appended to `out` (a Job's `events`).
  void AppendTo(google::protobuf::RepeatedPtrField<v1::Event>* out) const;
  std::vector<v1::Event> ToVector() const;

 private:
  // Room for one more record of `n` bytes, its length written before it: where it goes.
  uint8_t* Append(size_t n);

  std::string packed_;
  size_t size_ = 0;
};

}  // namespace baton
