#include "checkpoint/mpi_collective.h"

#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "common/status.h"

namespace baton::checkpoint {
namespace {

absl::Status MpiStatus(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return absl::UnavailableError(std::string(what) + " failed: " + std::string(text, len));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MpiCollective>> MpiCollective::Create(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return absl::FailedPreconditionError(
        "MpiCollective needs MPI to be initialized (and not finalized) first");
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  MPI_Comm dup;
  BATON_RETURN_IF_ERROR(MpiStatus(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup"));
  // Errors come back as codes (turned into Status) instead of aborting the job.
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &size);
  return std::unique_ptr<MpiCollective>(
      new MpiCollective(dup, rank, size, provided == MPI_THREAD_MULTIPLE));
}

MpiCollective::~MpiCollective() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

absl::StatusOr<int64_t> MpiCollective::AllReduceMax(int64_t value) {
  long long in = value, out = 0;
  BATON_RETURN_IF_ERROR(
      MpiStatus(MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, MPI_MAX, comm_), "MPI_Allreduce"));
  return static_cast<int64_t>(out);
}

absl::StatusOr<std::vector<std::string>> MpiCollective::AllGather(const std::string& value) {
  if (value.size() > static_cast<size_t>(std::numeric_limits<int>::max() / size_)) {
    return absl::InvalidArgumentError("AllGather message of " + std::to_string(value.size()) +
                                      " bytes is too large for MPI counts");
  }
  int mine = static_cast<int>(value.size());
  std::vector<int> lengths(size_);
  BATON_RETURN_IF_ERROR(MpiStatus(
      MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather"));
  std::vector<int> offsets(size_, 0);
  std::exclusive_scan(lengths.begin(), lengths.end(), offsets.begin(), 0);
  std::string all(static_cast<size_t>(offsets.back()) + lengths.back(), '\0');
  BATON_RETURN_IF_ERROR(MpiStatus(MPI_Allgatherv(value.data(), mine, MPI_CHAR, all.data(),
                                                 lengths.data(), offsets.data(), MPI_CHAR, comm_),
                                  "MPI_Allgatherv"));
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], lengths[r]);
  return out;
}

absl::StatusOr<std::string> MpiCollective::Broadcast(const std::string& value) {
  long long length = static_cast<long long>(value.size());
  BATON_RETURN_IF_ERROR(MpiStatus(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, comm_), "MPI_Bcast"));
  if (length < 0 || length > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError("Broadcast message of " + std::to_string(length) +
                                      " bytes is too large for MPI counts");
  }
  std::string out = rank_ == 0 ? value : std::string(static_cast<size_t>(length), '\0');
  BATON_RETURN_IF_ERROR(
      MpiStatus(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, 0, comm_), "MPI_Bcast"));
  return out;
}

}  // namespace baton::checkpoint
