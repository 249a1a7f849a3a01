// Proto3 JSON of a message, as google::protobuf::util::MessageToJsonString prints it with
// its default options (lowerCamelCase names, default values left out, 64-bit integers as
// strings, enums by name, bytes in base64). Protobuf 3.21 (Debian's) prints the same way,
// from the message's wire bytes, but through a type resolver, an object source and an
// object writer with a status per value: on a page of 5,000 jobs, that was the largest
// part of the dashboard's queue endpoint. Here the bytes are walked once against tables
// made once per message type.
//
// Byte for byte protobuf's text, messages of google/protobuf/*.proto (Any, Timestamp…)
// included: those go to protobuf's printer. tests/coordinator/proto_json_test.cc holds it
// to that.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace baton {

void AppendProtoJson(const google::protobuf::Message& msg, std::string* out);
std::string ProtoJson(const google::protobuf::Message& msg);

}  // namespace baton
