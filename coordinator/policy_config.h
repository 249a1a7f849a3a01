// The scheduling policy file (YAML; scripts/policy.example.yaml shows every key). Read by
// the coordinator at start, and by the admin command that replaces the policy. A file
// is checked whole: any problem refuses all of it, and the error names every problem.
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/policy.h"

namespace baton {

// A policy file (and SetPolicy's YAML) is at most this long.
inline constexpr size_t kMaxPolicyBytes = 1 << 20;

// Sections left out keep Policy::Default(); `classes`, when given, replaces the default
// classes. InvalidArgument listing every problem, one per line, when it does not check.
absl::StatusOr<Policy> ParsePolicy(const std::string& yaml);
// The file at `path`: NotFound when it cannot be read, else as ParsePolicy.
absl::StatusOr<Policy> LoadPolicyFile(const std::string& path);
// The checks ParsePolicy applies, for policies built in code.
absl::Status ValidatePolicy(const Policy& policy);
// What an admin's change did to classes and tenants, for the audit event: "class urgent
// added; tenant vision: weight 1 -> 2", or "classes and tenants unchanged".
std::string DescribePolicyChange(const Policy& before, const Policy& after);

}  // namespace baton
