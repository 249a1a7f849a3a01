#include "examples/train_mlp/allreduce.h"

#include <mpi.h>

#include <cstring>

#ifdef BATON_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace {

class MpiReducer : public GradientReducer {
 public:
  MpiReducer(int world) : world_(world) {}
  absl::Status SumAcrossRanks(std::vector<double>& values) override {
    all_.resize(values.size() * world_);
    int rc = MPI_Allgather(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, all_.data(),
                           static_cast<int>(values.size()), MPI_DOUBLE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return absl::InternalError("MPI_Allgather failed");
    for (size_t i = 0; i < values.size(); ++i) {
      double sum = 0;
      for (int r = 0; r < world_; ++r) sum += all_[r * values.size() + i];  // rank order
      values[i] = sum;
    }
    return absl::OkStatus();
  }
  const char* name() const override { return "mpi"; }

 private:
  int world_;
  std::vector<double> all_;
};

#ifdef BATON_WITH_NCCL
class NcclReducer : public GradientReducer {
 public:
  static absl::StatusOr<std::unique_ptr<GradientReducer>> Create(int world, int rank, int devices) {
    auto r = std::unique_ptr<NcclReducer>(new NcclReducer());
    int local = 0;
    if (const char* l = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) local = std::atoi(l);
    if (cudaSetDevice(local % devices) != cudaSuccess) {
      return absl::FailedPreconditionError("cudaSetDevice failed");
    }
    ncclUniqueId id;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
      return absl::InternalError("ncclGetUniqueId failed");
    }
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (ncclCommInitRank(&r->comm_, world, id, rank) != ncclSuccess) {
      return absl::InternalError("ncclCommInitRank failed");
    }
    cudaStreamCreate(&r->stream_);
    return std::unique_ptr<GradientReducer>(std::move(r));
  }
  ~NcclReducer() override {
    if (dev_) cudaFree(dev_);
    ncclCommDestroy(comm_);
  }
  absl::Status SumAcrossRanks(std::vector<double>& values) override {
    size_t bytes = values.size() * sizeof(double);
    if (bytes > dev_bytes_) {
      if (dev_) cudaFree(dev_);
      if (cudaMalloc(&dev_, bytes) != cudaSuccess)
        return absl::ResourceExhaustedError("cudaMalloc");
      dev_bytes_ = bytes;
    }
    cudaMemcpyAsync(dev_, values.data(), bytes, cudaMemcpyHostToDevice, stream_);
    if (ncclAllReduce(dev_, dev_, values.size(), ncclDouble, ncclSum, comm_, stream_) !=
        ncclSuccess) {
      return absl::InternalError("ncclAllReduce failed");
    }
    cudaMemcpyAsync(values.data(), dev_, bytes, cudaMemcpyDeviceToHost, stream_);
    if (cudaStreamSynchronize(stream_) != cudaSuccess) return absl::InternalError("CUDA stream");
    return absl::OkStatus();
  }
  const char* name() const override { return "nccl"; }

 private:
  NcclReducer() = default;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* dev_ = nullptr;
  size_t dev_bytes_ = 0;
};
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<GradientReducer>> GradientReducer::Create(int world, int rank) {
#ifdef BATON_WITH_NCCL
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    return NcclReducer::Create(world, rank, devices);
  }
#endif
  (void)rank;
  return std::unique_ptr<GradientReducer>(new MpiReducer(world));
}

absl::StatusOr<uint64_t> NcclBootstrapIdHash(int rank) {
#ifdef BATON_WITH_NCCL
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) {
    return absl::InternalError("ncclGetUniqueId failed");
  }
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof id; ++i) {
    h = (h ^ static_cast<unsigned char>(id.internal[i])) * 1099511628211ull;
  }
  return h;
#else
  (void)rank;
  return absl::UnimplementedError("built without NCCL");
#endif
}
