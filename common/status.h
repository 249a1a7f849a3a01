// Status vocabulary shared by every part of baton: absl::Status / StatusOr plus the two
// propagation macros and errno conversion. Pure helpers; thread-safe.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define BATON_STATUS_CONCAT_INNER(a, b) a##b
#define BATON_STATUS_CONCAT(a, b) BATON_STATUS_CONCAT_INNER(a, b)

// Returns from the calling function when `expr` is not OK.
#define BATON_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::absl::Status baton_status_ = (expr);       \
    if (!baton_status_.ok()) return baton_status_; \
  } while (0)

// `BATON_ASSIGN_OR_RETURN(auto x, MakeX());` binds the value or returns the error.
#define BATON_ASSIGN_OR_RETURN(lhs, expr) \
  BATON_ASSIGN_OR_RETURN_IMPL(BATON_STATUS_CONCAT(baton_statusor_, __LINE__), lhs, expr)
#define BATON_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

namespace baton {

// Maps an errno value to the code a caller acts on (NotFound, PermissionDenied,
// ResourceExhausted for ENOSPC, …) with "`what`: strerror" as the message.
absl::Status ErrnoToStatus(int err, std::string_view what);

}  // namespace baton
