#include "examples/train_mlp/allreduce.h"

#include <cstring>

#ifdef BATON_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace {

namespace ckpt = baton::checkpoint;

class HostReducer : public GradientReducer {
 public:
  HostReducer(ckpt::Collective* collective, std::string name)
      : collective_(collective), name_(std::move(name)) {}
  absl::Status SumAcrossRanks(std::vector<double>& values) override {
    std::string mine(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
    auto all = collective_->AllGather(mine);
    if (!all.ok()) return all.status();
    for (const std::string& v : *all) {
      if (v.size() != mine.size()) return absl::InternalError("ranks sent vectors of other sizes");
    }
    for (size_t i = 0; i < values.size(); ++i) {
      double sum = 0;
      for (const std::string& v : *all) {  // rank order
        double x;
        std::memcpy(&x, v.data() + i * sizeof(double), sizeof x);
        sum += x;
      }
      values[i] = sum;
    }
    return absl::OkStatus();
  }
  const char* name() const override { return name_.c_str(); }

 private:
  ckpt::Collective* collective_;
  std::string name_;
};

#ifdef BATON_WITH_NCCL
std::string NcclError(const char* what, ncclResult_t r) {
  std::string last = ncclGetLastError(nullptr);
  return std::string(what) + ": " + ncclGetErrorString(r) + (last.empty() ? "" : " (" + last + ")");
}

// Rank 0's unique id on every rank.
absl::StatusOr<ncclUniqueId> BroadcastUniqueId(ckpt::Collective& collective) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (collective.rank() == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      return absl::InternalError(NcclError("ncclGetUniqueId", r));
    }
  }
  auto got = collective.Broadcast(std::string(id.internal, sizeof id.internal));
  if (!got.ok()) return got.status();
  if (got->size() != sizeof id.internal) return absl::InternalError("a short ncclUniqueId");
  std::memcpy(id.internal, got->data(), sizeof id.internal);
  return id;
}

class NcclReducer : public GradientReducer {
 public:
  static absl::StatusOr<std::unique_ptr<GradientReducer>> Create(ckpt::Collective& collective,
                                                                 int local_rank, int devices) {
    auto r = std::unique_ptr<NcclReducer>(new NcclReducer());
    if (cudaSetDevice(local_rank % devices) != cudaSuccess) {
      return absl::FailedPreconditionError("cudaSetDevice failed");
    }
    auto id = BroadcastUniqueId(collective);
    if (!id.ok()) return id.status();
    ncclResult_t rc = ncclCommInitRank(&r->comm_, collective.size(), *id, collective.rank());
    if (rc != ncclSuccess) return absl::InternalError(NcclError("ncclCommInitRank", rc));
    cudaStreamCreate(&r->stream_);
    return std::unique_ptr<GradientReducer>(std::move(r));
  }
  ~NcclReducer() override {
    if (dev_) cudaFree(dev_);
    if (comm_) ncclCommDestroy(comm_);
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
    ncclResult_t rc = ncclAllReduce(dev_, dev_, values.size(), ncclDouble, ncclSum, comm_, stream_);
    if (rc != ncclSuccess) return absl::InternalError(NcclError("ncclAllReduce", rc));
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

absl::StatusOr<std::unique_ptr<GradientReducer>> NewGradientReducer(ReducerKind kind,
                                                                    ckpt::Collective* collective,
                                                                    int local_rank,
                                                                    const std::string& host_name) {
  if (kind != ReducerKind::kHost) {
#ifdef BATON_WITH_NCCL
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err == cudaSuccess && devices > 0) {
      return NcclReducer::Create(*collective, local_rank, devices);
    }
    if (kind == ReducerKind::kNccl) {
      return absl::FailedPreconditionError(std::string("no CUDA device for NCCL: ") +
                                           cudaGetErrorString(err));
    }
#else
    (void)local_rank;
    if (kind == ReducerKind::kNccl) return absl::UnimplementedError("built without NCCL");
#endif
  }
  return std::unique_ptr<GradientReducer>(new HostReducer(collective, host_name));
}

absl::StatusOr<uint64_t> NcclBootstrapIdHash(ckpt::Collective& collective) {
#ifdef BATON_WITH_NCCL
  auto id = BroadcastUniqueId(collective);
  if (!id.ok()) return id.status();
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof id->internal; ++i) {
    h = (h ^ static_cast<unsigned char>(id->internal[i])) * 1099511628211ull;
  }
  return h;
#else
  (void)collective;
  return absl::UnimplementedError("built without NCCL");
#endif
}
