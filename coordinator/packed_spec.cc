#include "coordinator/packed_spec.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace baton {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Calls fn(field number, the field's bytes with its tag, its payload when length-delimited)
// for each field of the serialized message `msg`, in order. False when it does not parse.
template <typename Fn>
bool ForEachField(std::string_view msg, Fn fn) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(msg.data()), static_cast<int>(msg.size()));
  for (;;) {
    const int start = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return static_cast<size_t>(in.CurrentPosition()) == msg.size();
    std::string_view payload;
    if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t n = 0;
      if (!in.ReadVarint32(&n) || n > msg.size() - in.CurrentPosition()) return false;
      payload = msg.substr(in.CurrentPosition(), n);
      if (!in.Skip(static_cast<int>(n))) return false;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
    fn(WireFormatLite::GetTagFieldNumber(tag), msg.substr(start, in.CurrentPosition() - start),
       payload);
  }
}

bool Packed(int field) {
  return field == v1::JobSpec::kEnvFieldNumber || field == v1::JobSpec::kCommandFieldNumber;
}

}  // namespace

bool HasUnknownFields(std::string_view msg, const google::protobuf::Descriptor* type) {
  bool unknown = false;
  ForEachField(msg, [&](int number, std::string_view, std::string_view payload) {
    if (unknown) return;
    const google::protobuf::FieldDescriptor* f = type->FindFieldByNumber(number);
    if (f == nullptr) {
      unknown = true;
    } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE &&
               payload.data() != nullptr) {
      unknown = HasUnknownFields(payload, f->message_type());
    }
  });
  return unknown;
}

std::string PackSpec(v1::JobSpec* spec) {
  if (spec->env().empty() && spec->command().empty()) return "";
  v1::JobSpec cold;
  cold.mutable_env()->swap(*spec->mutable_env());
  cold.mutable_command()->Swap(spec->mutable_command());
  return cold.SerializeAsString();
}

bool UnpackSpec(std::string_view packed, v1::JobSpec* spec) {
  if (packed.empty()) return true;
  // Merging appends command words and adds env entries: exact into a spec with neither.
  CodedInputStream in(reinterpret_cast<const uint8_t*>(packed.data()),
                      static_cast<int>(packed.size()));
  return spec->MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
}

bool SplitJobRecord(std::string_view record, std::string* rest, std::string* packed) {
  rest->clear();
  packed->clear();
  bool ok = true;
  std::string spec_rest;
  const bool framed =
      ForEachField(record, [&](int field, std::string_view whole, std::string_view payload) {
        if (field != v1::Job::kSpecFieldNumber || payload.data() == nullptr) {
          rest->append(whole);
          return;
        }
        spec_rest.clear();
        ok = ok && ForEachField(payload, [&](int f, std::string_view w, std::string_view) {
               (Packed(f) ? packed : &spec_rest)->append(w);
             });
        // The spec again, without the packed fields: its tag, its new length, its bytes.
        google::protobuf::io::StringOutputStream out(rest);
        google::protobuf::io::CodedOutputStream coded(&out);
        coded.WriteTag(WireFormatLite::MakeTag(v1::Job::kSpecFieldNumber,
                                               WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
        coded.WriteVarint32(static_cast<uint32_t>(spec_rest.size()));
        coded.WriteRaw(spec_rest.data(), static_cast<int>(spec_rest.size()));
      });
  return framed && ok;
}

}  // namespace baton
