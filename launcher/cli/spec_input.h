// Job specs as researchers write them — a YAML file (`baton submit -f job.yaml`) or
// flags — mapped onto the one JobSpec message. Both go through the same field table,
// so a key means the same in either. Errors name the key or flag and the bad value.
// Pure; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "proto/api.pb.h"

namespace baton::cli {

// Sets one scalar field from text: `key` is a YAML key ("gpus_per_node", alias "gpus")
// and `shown` how to name it in errors ("--gpus" or "job.yaml: gpus").
absl::Status SetSpecField(const std::string& key, const std::string& value,
                          const std::string& shown, v1::JobSpec* spec);

// "key=value" into node_selector or env.
absl::Status AddKeyValue(const std::string& text, const std::string& shown,
                         google::protobuf::Map<std::string, std::string>* map);
// "key[=value][:effect]"; no value means any value (exists).
absl::StatusOr<v1::Toleration> ParseToleration(const std::string& text, const std::string& shown);

// The whole file. Unknown keys are errors (they are usually typos).
absl::StatusOr<v1::JobSpec> SpecFromYaml(const std::string& text, const std::string& source);

// InvalidArgument naming the first field whose text is not UTF-8: the API's strings are
// proto3 strings, so the coordinator could not even parse such a spec.
absl::Status CheckSpecText(const v1::JobSpec& spec, const std::string& source);

}  // namespace baton::cli
