#include "coordinator/event_list.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "google/protobuf/io/coded_stream.h"

namespace baton {

uint8_t* EventList::Append(size_t n) {
  const size_t at = packed_.size();
  packed_.resize(at + google::protobuf::io::CodedOutputStream::VarintSize64(n) + n);
  ++size_;
  return google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(
      n, reinterpret_cast<uint8_t*>(packed_.data() + at));
}

void EventList::push_back(const v1::Event& ev) {
  ev.SerializeWithCachedSizesToArray(Append(ev.ByteSizeLong()));
}

void EventList::AppendRecord(std::string_view record) {
  std::memcpy(Append(record.size()), record.data(), record.size());
}

void EventList::AppendTo(google::protobuf::RepeatedPtrField<v1::Event>* out) const {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(packed_.data()),
                                            static_cast<int>(packed_.size()));
  for (size_t i = 0; i < size_; ++i) {
    uint64_t n = 0;
    if (!in.ReadVarint64(&n)) throw std::logic_error("EventList: a length does not parse");
    const auto limit = in.PushLimit(static_cast<int>(n));
    v1::Event* ev = out->Add();
    if (!ev->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      ev->Clear();
      ev->set_reason("(a stored event record of " + std::to_string(n) + " bytes does not parse)");
      in.Skip(in.BytesUntilLimit());
    }
    in.PopLimit(limit);
  }
}

std::vector<v1::Event> EventList::ToVector() const {
  google::protobuf::RepeatedPtrField<v1::Event> all;
  AppendTo(&all);
  return {std::make_move_iterator(all.begin()), std::make_move_iterator(all.end())};
}

}  // namespace baton
