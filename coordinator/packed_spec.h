// The parts of a waiting job's spec that only a launch or a reader of the whole record
// needs (env and command) kept packed in their wire form: a typical spec's ten variables
// and five words are ~350 bytes packed against ~1.4 KiB of map nodes and strings parsed
// (issue 51: a million pending jobs in memory). JobTable packs and unpacks entries; the
// store's Load can split a stored record so that these fields are never parsed at all.
#pragma once

#include <string>
#include <string_view>

#include "proto/api.pb.h"

namespace baton {

// Moves `spec`'s env and command out, returned packed ("" when it has neither).
std::string PackSpec(v1::JobSpec* spec);
// Puts packed env and command back into `spec` (which must have neither). False when
// `packed` does not parse.
bool UnpackSpec(std::string_view packed, v1::JobSpec* spec);
// Splits a stored v1::Job record, at the wire level, into the record without its spec's
// env and command (`rest`) and those fields packed, as PackSpec would return them. False
// when the record's framing is malformed.
bool SplitJobRecord(std::string_view record, std::string* rest, std::string* packed);
// Whether the serialized `msg` of type `type` holds a field `type` (or, at any depth, the
// type of a message field) does not know; false also when its framing is malformed (a
// parse will say so). Reads the wire form only: no parse, no allocation.
bool HasUnknownFields(std::string_view msg, const google::protobuf::Descriptor* type);

}  // namespace baton
